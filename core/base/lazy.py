"""Lazy re-exports: a package's public names imported from their modules on first use.

``import core`` then costs almost nothing; ``core.analyze`` imports :mod:`core.analyses.analysis`
when first read.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, exports: dict[str, str], namespace: dict[str, Any]
) -> Callable[[str], Any]:
    """Return a module ``__getattr__`` that imports ``exports[name]`` on first use (cached)."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    return __getattr__
