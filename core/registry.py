"""Name registries: map a UI or API choice to an implementation and its metadata.

Pages build their select boxes from these registries, the CLI validates its
options against them and :func:`core.calibration_error` dispatches through
them, so adding an estimator (or binning scheme, test, recalibrator) is one
``register`` call plus its tests.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from core.errors import ConfigError

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Entry(Generic[F]):
    """One registered implementation.

    Attributes
    ----------
    name : str
        Public name used by the API, the CLI and URLs (e.g. ``"debiased"``).
    func : callable
        The implementation.
    label : str
        Short human label for select boxes.
    description : str
        One or two sentences for tooltips and the docs.
    formula : str
        Where the formula comes from (paper and equation, or a docs anchor).
    meta : dict
        Free-form capabilities, e.g. ``{"norms": (1, 2), "lenses": (...), "random": False}``.
    """

    name: str
    func: F
    label: str
    description: str = ""
    formula: str = ""
    meta: dict[str, Any] = field(default_factory=dict)


class Registry(Generic[F]):
    """An ordered mapping from public names to :class:`Entry` objects.

    Parameters
    ----------
    kind : str
        What the registry holds, used in error messages (e.g. ``"estimator"``).
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, Entry[F]] = {}

    def register(
        self,
        name: str,
        *,
        label: str | None = None,
        description: str = "",
        formula: str = "",
        **meta: Any,
    ) -> Callable[[F], F]:
        """Return a decorator that registers a function under ``name``.

        Parameters
        ----------
        name : str
            Public name; must be new to this registry.
        label, description, formula : str
            Metadata shown in the UI and docs.
        **meta
            Capabilities stored in :attr:`Entry.meta`.

        Returns
        -------
        callable
            The decorator, which returns the function unchanged.
        """

        def decorator(func: F) -> F:
            if name in self._entries:
                raise RuntimeError(f"{self.kind} {name!r} is registered twice")
            self._entries[name] = Entry(
                name=name,
                func=func,
                label=label or name,
                description=description,
                formula=formula,
                meta=dict(meta),
            )
            return func

        return decorator

    def get(self, name: str) -> Entry[F]:
        """Return the entry called ``name``.

        Raises
        ------
        ConfigError
            If no entry has that name; the message lists the valid names.
        """
        try:
            return self._entries[name]
        except (KeyError, TypeError):
            choices = ", ".join(repr(n) for n in self._entries)
            raise ConfigError(f"Unknown {self.kind} {name!r}. Choose one of: {choices}.") from None

    def names(self, **where: Any) -> list[str]:
        """Return the registered names, optionally filtered on metadata.

        Parameters
        ----------
        **where
            ``key=value`` pairs; an entry is kept when ``meta[key] == value``, or,
            when ``meta[key]`` is a tuple, when ``value`` is in it.

        Returns
        -------
        list of str
            Names in registration order.
        """
        out = []
        for name, entry in self._entries.items():
            ok = True
            for key, value in where.items():
                have = entry.meta.get(key)
                ok &= value in have if isinstance(have, tuple) else have == value
            if ok:
                out.append(name)
        return out

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[Entry[F]]:
        return iter(self._entries.values())

    def __len__(self) -> int:
        return len(self._entries)
