"""Name registries: map a UI or API choice to an implementation and its typed description.

Pages build their select boxes from these registries, the CLI validates its options
against them and the API dispatches through them, so adding an estimator (or binning
scheme, test, recalibrator) is one ``register`` call plus its tests.

Every registry holds entries of one frozen dataclass type, a subclass of :class:`Entry`
that declares the capabilities of that kind of implementation as typed fields (an
estimator's lenses, norms and batch kernel; a binning's data dependence; a test's
options). A registration with a field the type does not have fails at import time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields
from typing import Any, Generic, TypeVar

from core.base.errors import ConfigError


@dataclass(frozen=True, kw_only=True)
class Entry:
    """One registered implementation.

    Attributes
    ----------
    name : str
        Public name used by the API, the CLI and URLs (e.g. ``"debiased"``).
    func : callable
        The implementation.
    label : str
        Short human label for select boxes and tables.
    description : str
        One or two sentences for tooltips and the docs.
    formula : str
        Where the formula comes from (paper and equation, or a docs anchor).
    """

    name: str
    func: Callable[..., Any]
    label: str
    description: str = ""
    formula: str = ""


E = TypeVar("E", bound=Entry)


class Registry(Generic[E]):
    """An ordered mapping from public names to typed entries.

    Parameters
    ----------
    kind : str
        What the registry holds, used in error messages (e.g. ``"estimator"``).
    entry_type : type
        The :class:`Entry` subclass of its entries; :meth:`register` builds one.
    """

    def __init__(self, kind: str, entry_type: type[E] = Entry) -> None:  # type: ignore[assignment]
        self.kind = kind
        self.entry_type = entry_type
        self._entries: dict[str, E] = {}

    def register(self, name: str, **fields_: Any) -> Callable[[Callable[..., Any]], Any]:
        """Return a decorator that registers a function (or class) under ``name``.

        Parameters
        ----------
        name : str
            Public name; must be new to this registry.
        **fields_
            The entry's fields (``label``, ``description``, ``formula`` and the typed
            capabilities of :attr:`entry_type`); ``label`` defaults to ``name``.

        Returns
        -------
        callable
            The decorator, which returns the function unchanged.
        """

        def decorator(func: Callable[..., Any]) -> Any:
            self.add(self.entry_type(name=name, func=func, **{"label": name, **fields_}))
            return func

        return decorator

    def add(self, entry: E) -> E:
        """Register a ready-made entry.

        Parameters
        ----------
        entry : Entry
            An instance of :attr:`entry_type` with a new name.

        Returns
        -------
        Entry
            The entry.
        """
        if not isinstance(entry, self.entry_type):
            raise TypeError(f"{self.kind} entries are {self.entry_type.__name__} objects")
        if entry.name in self._entries:
            raise RuntimeError(f"{self.kind} {entry.name!r} is registered twice")
        self._entries[entry.name] = entry
        return entry

    def get(self, name: str) -> E:
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
        """Return the registered names, optionally filtered on entry fields.

        Parameters
        ----------
        **where
            ``field=value`` pairs; an entry is kept when its field equals ``value``, or,
            when the field is a tuple, when ``value`` is in it.

        Returns
        -------
        list of str
            Names in registration order.
        """
        known = {f.name for f in fields(self.entry_type)} | {
            k for k in dir(self.entry_type) if isinstance(getattr(self.entry_type, k), property)
        }
        unknown = sorted(set(where) - known)
        if unknown:
            raise TypeError(f"{self.entry_type.__name__} has no field(s) {', '.join(unknown)}")
        out = []
        for name, entry in self._entries.items():
            ok = True
            for key, value in where.items():
                have = getattr(entry, key)
                ok &= value in have if isinstance(have, tuple) else have == value
            if ok:
                out.append(name)
        return out

    def labels(self) -> dict[str, str]:
        """Return ``name -> label`` of every entry, in registration order."""
        return {name: entry.label for name, entry in self._entries.items()}

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[E]:
        return iter(self._entries.values())

    def __len__(self) -> int:
        return len(self._entries)
