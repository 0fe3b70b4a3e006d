"""plotly.js for self-contained HTML documents that draw figures without a network."""

from __future__ import annotations

from plotly.offline import get_plotlyjs


def plotly_js() -> str:
    """Return the plotly.js library, to inline once in a document's head (about 4.6 MB)."""
    return get_plotlyjs()
