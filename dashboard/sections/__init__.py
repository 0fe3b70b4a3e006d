"""Sections of the pages: a page's parts that lay out what :mod:`dashboard.calls` returns."""
