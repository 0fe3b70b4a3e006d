"""Page scripts of the dashboard; each is listed once in :mod:`dashboard.pages`."""
