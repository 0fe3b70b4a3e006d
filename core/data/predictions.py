"""The :class:`Predictions` object: validated arrays, role columns, lint report and digest.

:func:`as_predictions` wraps a ``(probs, labels)`` pair and :func:`combine_models`
stacks one :class:`Predictions` per model into a long table. Every constructor goes
through :func:`make_predictions`, which makes the arrays read-only and computes the digest.
"""

from __future__ import annotations

import dataclasses
import hashlib
import types
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from core.base.errors import DataError
from core.base.names import visible
from core.base.validation import binary_matrix, check_predictions, trust
from core.data.lint import VALUE_CODES, LintFinding, LintReport, lint_values
from core.data.text import text_codes

__all__ = ["Predictions", "as_predictions", "combine_models"]


@dataclass(frozen=True, eq=False)
class Predictions:
    """Validated predictions, labels and their lint report.

    Attributes
    ----------
    probs : numpy.ndarray
        ``(n, K)`` float64 probabilities, ``K >= 2``, rows summing to 1 (read-only).
    labels : numpy.ndarray
        ``(n,)`` int64 class indices ``0..K-1`` (read-only).
    class_names : tuple of str
        Names of the ``K`` classes (for binary input: negative, positive).
    binary : bool
        Whether the input was a single P(y=1) column.
    model, split, group : numpy.ndarray or None
        Object arrays of the optional role columns.
    lint : LintReport
        Findings of the load.
    source : str
        Where the data came from (a file name, ``"DataFrame"`` or ``"arrays"``).
    digest : str
        Exact content hash (SHA-256 leaves, blake2b over them) of the arrays, class names and role columns;
        equal data gives an equal digest, so caches can key on it.
    columns : dict
        The column mapping used: ``label``, ``probs``, ``model``, ``split``,
        ``group`` (source column names or None), ``positive_class``, ``logits``.
    extra : mapping of str to numpy.ndarray
        Further columns of the source kept at load (``load_predictions(keep_columns=...)``),
        read-only, row for row: numbers as int64/float64/bool, times as ``datetime64[ns]``,
        anything else as an object array of strings (a missing value is ``""``). Grouping
        columns for :func:`core.analyses.subgroups.subgroup_analysis` and time columns for
        :func:`core.analyses.subgroups.window_analysis`. Carried by :meth:`subset`,
        :meth:`by_model` and :func:`combine_models`; not part of ``digest``, so the same rows
        have the same digest whatever columns are kept, in memory and on a stream.
    kept_digest : str
        Exact content hash of the kept columns (names, kinds and values); ``""`` without
        any. Caches of work that reads them key on it beside ``digest``.
    """

    probs: np.ndarray
    labels: np.ndarray
    class_names: tuple[str, ...]
    binary: bool
    model: np.ndarray | None
    split: np.ndarray | None
    group: np.ndarray | None
    lint: LintReport
    source: str
    digest: str
    columns: dict[str, Any] = field(default_factory=dict)
    extra: Mapping[str, np.ndarray] = field(default_factory=lambda: types.MappingProxyType({}))
    kept_digest: str = ""

    @property
    def n(self) -> int:
        """Number of rows."""
        return int(self.labels.shape[0])

    @property
    def n_classes(self) -> int:
        """Number of classes ``K``."""
        return int(self.probs.shape[1])

    @property
    def models(self) -> tuple[str, ...]:
        """Model names in order of first appearance (empty without a model column)."""
        if self.model is None:
            return ()
        import pandas as pd

        return tuple(str(m) for m in pd.unique(self.model))

    def subset(self, mask: np.ndarray | Sequence[int] | Sequence[bool]) -> Predictions:
        """Return the rows selected by a boolean mask or an index array.

        The value-level lint findings (ties, missing classes, few rows, ...) are
        recomputed on the subset; findings about the load itself are kept.

        Parameters
        ----------
        mask : array_like
            Boolean ``(n,)`` mask or integer row positions.

        Returns
        -------
        Predictions
            The subset, with its own digest.

        Raises
        ------
        DataError
            If the subset is empty or the mask has the wrong length.
        """
        m = np.asarray(mask)
        if m.dtype == bool and m.shape != (self.n,):
            raise DataError(f"A boolean mask must have {self.n} entries; got shape {m.shape}.")
        idx = np.flatnonzero(m) if m.dtype == bool else m.astype(np.int64).ravel()
        if idx.size == 0:
            raise DataError("The selection is empty: no rows match.")
        if idx.min() < -self.n or idx.max() >= self.n:
            raise DataError(f"Row positions must lie in 0..{self.n - 1}.")
        probs, labels = self.probs[idx], self.labels[idx]
        roles = {k: None if v is None else v[idx] for k, v in self._roles().items()}
        kept = [f for f in self.lint if f.code not in VALUE_CODES]
        found = lint_values(
            probs,
            labels,
            binary=self.binary,
            class_names=self.class_names,
            prob_columns=tuple(self.columns.get("probs") or ()),
        )
        return make_predictions(
            probs,
            labels,
            self.class_names,
            self.binary,
            roles,
            LintReport(tuple(kept + found)),
            self.source,
            dict(self.columns),
            {name: values[idx] for name, values in self.extra.items()},
        )

    def by_model(self) -> dict[str, Predictions]:
        """Split a long file with a ``model`` column into one :class:`Predictions` per model.

        Returns
        -------
        dict of str to Predictions
            In order of first appearance; without a model column, one entry named
            after the source holding ``self``.
        """
        if self.model is None:
            return {Path(self.source).stem or "model": self}
        codes, names = text_codes(self.model)
        index = {name: j for j, name in enumerate(names)}
        return {m: self.subset(codes == index[m]) for m in self.models}

    def _roles(self) -> dict[str, np.ndarray | None]:
        return {"model": self.model, "split": self.split, "group": self.group}


def as_predictions(data: Any, *, class_names: Sequence[str] | None = None) -> Predictions:
    """Return ``data`` as :class:`Predictions`: the one input of every page-level analysis.

    Parameters
    ----------
    data : Predictions or tuple
        Loaded predictions (returned as they are), or a ``(probs, labels)`` pair of arrays:
        ``probs`` ``(n,)`` P(y=1) (binary predictions) or ``(n, K)`` class probabilities,
        ``labels`` class indices ``0..K−1``. The arrays are copied (a :class:`Predictions`
        is read-only) and not linted.
    class_names : sequence of str, optional
        Class names of a pair of arrays (default ``"0"``, ``"1"``, ...).

    Returns
    -------
    Predictions
        The predictions.

    Raises
    ------
    DataError
        For invalid arrays, or anything else than predictions or a pair.

    Examples
    --------
    >>> pred = as_predictions(([0.2, 0.9], [0, 1]))
    >>> pred.binary, pred.probs.shape
    (True, (2, 2))
    """
    if isinstance(data, Predictions):
        if class_names is not None and tuple(class_names) != data.class_names:
            raise DataError("class_names are given by the Predictions object; leave them out.")
        return data
    if not isinstance(data, tuple) or len(data) != 2:
        raise DataError(
            "Pass predictions as a Predictions object (core.load_predictions) or a "
            "(probs, labels) pair of arrays."
        )
    p, y, binary = check_predictions(*data, matrix=False)
    k = 2 if binary else p.shape[1]
    names = tuple(str(c) for c in class_names) if class_names is not None else None
    if names is None:
        names = tuple(str(i) for i in range(k))
    if len(names) != k:
        raise DataError(f"{len(names)} class names given for {k} classes.")
    # the row-major matrix is made once, and an array is copied only if the caller's
    # data is in it (a Predictions is read-only)
    probs = binary_matrix(p, order="C") if binary else _own(p, data[0], order="C")
    return make_predictions(
        probs,
        _own(y, data[1]),
        names,
        binary,
        {},
        LintReport(()),
        "arrays",
        {},
    )


def _own(checked: np.ndarray, given: Any, order: str = "K") -> np.ndarray:
    """Return the validated array ``checked`` if validation made it anew, else a copy."""
    if checked is not given and checked.base is None:
        return checked
    return np.array(checked, order=order, copy=True)


def _prefixed(finding: LintFinding, prefix: str) -> LintFinding:
    # the template carries the phrasing of every surface (core.base.errors.phrase)
    return dataclasses.replace(
        finding, message=prefix + finding.message, template=prefix + finding.template
    )


def combine_models(parts: Mapping[str, Predictions]) -> Predictions:
    """Stack several models' predictions (e.g. one file per model) into one long table.

    Parameters
    ----------
    parts : mapping of str to Predictions
        Model name → its predictions; all must have the same class names and layout.

    Returns
    -------
    Predictions
        Rows of every part in order, with a ``model`` column holding the names
        (which replace any model column of the parts). ``by_model()`` undoes it.

    Raises
    ------
    DataError
        If there are no parts or their classes differ.
    """
    if not parts:
        raise DataError("No predictions to combine.")
    items = list(parts.items())
    first = items[0][1]
    for name, part in items[1:]:
        if part.class_names != first.class_names or part.binary != first.binary:
            raise DataError(
                f"Model {name!r} has classes {part.class_names} but {items[0][0]!r} has "
                f"{first.class_names}; only predictions of the same classes can be compared."
            )
    roles: dict[str, np.ndarray | None] = {
        "model": np.concatenate([np.full(p.n, str(m), dtype=object) for m, p in items])
    }
    for role in ("split", "group"):
        arrays = [getattr(p, role) for _, p in items]
        roles[role] = None if any(a is None for a in arrays) else np.concatenate(arrays)
    # a finding of the load every part shares (e.g. one labels file) is said once
    found: dict[tuple[str, str], list] = {}
    for m, p in items:
        for f in p.lint:
            if f.code not in VALUE_CODES:
                found.setdefault((f.code, f.message), []).append((m, f))
    findings = []
    for _, where in found.items():
        if len(where) == len(items) > 1:
            findings.append(_prefixed(where[0][1], "every model: "))
        else:
            findings += [_prefixed(f, f"{m}: ") for m, f in where]
    probs = np.concatenate([p.probs for _, p in items])
    labels = np.concatenate([p.labels for _, p in items])
    findings += lint_values(probs, labels, binary=first.binary, class_names=first.class_names)
    mapping = dict(first.columns, model="model")
    source = " + ".join(p.source for _, p in items)
    # a kept column every part has (with one kind of values) is kept
    extra = {}
    for name, values in first.extra.items():
        arrays = [p.extra.get(name) for _, p in items]
        if all(a is not None and a.dtype == values.dtype for a in arrays):
            extra[name] = np.concatenate(arrays)
    return make_predictions(
        probs,
        labels,
        first.class_names,
        first.binary,
        roles,
        LintReport(tuple(findings)),
        source,
        mapping,
        extra,
    )


#: Bytes of probabilities and labels per digest leaf (see :class:`Digest`).
LEAF_BYTES = 1 << 20

_ROLES = ("model", "split", "group")


#: The unsigned types a leaf's labels are hashed in, narrowest first.
_LABEL_TYPES = (np.uint8, np.uint16, np.uint32, np.uint64)


def leaf_rows(k: int) -> int:
    """Rows per digest leaf for ``K`` probability columns."""
    return max(1, LEAF_BYTES // (8 * (k + 1)))


@dataclass(frozen=True, eq=False)
class _Rows:
    """Raw rows kept until their digest leaf is complete."""

    probs: np.ndarray
    labels: np.ndarray
    roles: dict[str, np.ndarray]

    def __add__(self, other: _Rows) -> _Rows:
        return _Rows(
            np.concatenate([self.probs, other.probs]),
            np.concatenate([self.labels, other.labels]),
            {r: np.concatenate([self.roles[r], other.roles[r]]) for r in self.roles},
        )

    def __getitem__(self, sl: slice) -> _Rows:
        return _Rows(self.probs[sl], self.labels[sl], {r: v[sl] for r, v in self.roles.items()})

    def hash(self) -> bytes:
        # every field is framed by its length, so no two different leaves feed the hash the
        # same bytes (a separator can occur inside a name; a length prefix cannot be forged).
        # SHA-256 runs on the CPU's SHA instructions (about twice blake2b's speed), and the
        # labels are fed in the narrowest unsigned type that holds this leaf's largest one,
        # named in the hash: a function of the leaf's rows alone, so any batching agrees.
        h = hashlib.sha256()
        _frame(h, self.labels.shape[0].to_bytes(8, "little"))
        _frame(h, memoryview(np.ascontiguousarray(self.probs, dtype=np.float64)).cast("B"))
        labels = self.labels
        kind: Any = np.int64  # negative labels (none in valid predictions) as they are
        if not labels.size or labels.min() >= 0:
            top = int(labels.max()) if labels.size else 0
            kind = next(t for t in _LABEL_TYPES if top <= np.iinfo(t).max)
        _frame(h, np.dtype(kind).str.encode())
        _frame(h, memoryview(np.ascontiguousarray(labels, dtype=kind)).cast("B"))
        for role in _ROLES:
            if role in self.roles:
                _frame(h, role.encode())
                _strings(h, self.roles[role])
        return h.digest()[:16]


def _frame(h: Any, data: bytes | memoryview) -> None:
    """Feed ``data`` to the hash ``h`` after its length (8 bytes, little-endian)."""
    h.update(len(data).to_bytes(8, "little"))
    h.update(data)


#: Bytes of role values joined before hashing; longer ones are fed row by row.
_JOIN_BYTES = 64 << 20


def _strings(h: Any, values: Any) -> None:
    """Feed a sequence of values to ``h`` as strings, injectively.

    The count, then every string's UTF-8 length, then the strings: two different sequences
    never give the same bytes, whatever characters the strings hold.
    """
    # each distinct value is encoded once: rows repeating a long value share its bytes
    seen: dict[Any, bytes] = {}
    encoded = []
    for v in values:
        key = (type(v), v)  # 1, 1.0 and True are equal keys but print differently
        b = seen.get(key)
        if b is None:
            b = seen[key] = str(v).encode("utf-8", "surrogatepass")
        encoded.append(b)
    lengths = np.fromiter(map(len, encoded), dtype="<i8", count=len(encoded))
    _frame(h, len(encoded).to_bytes(8, "little"))
    _frame(h, memoryview(lengths).cast("B"))
    total = int(lengths.sum())
    if total <= _JOIN_BYTES:
        _frame(h, b"".join(encoded))
        return
    h.update(total.to_bytes(8, "little"))
    for b in encoded:
        h.update(b)


class Digest:
    """The digest of predictions, fed in chunks of rows in any grouping.

    Rows are cut into leaves of :func:`leaf_rows` rows at fixed positions (row ``j·L``
    starts leaf ``j``); each leaf is hashed (SHA-256 of its probabilities, labels and role
    values), and the digest hashes the leaf hashes in order with the shape, the class names
    and the layout. Every variable-length field (a name, a role value, a list of them) is
    fed with its length first, so the digest is injective: two tables that differ in any
    name or value cannot share it, however the names are chosen. A chunk of rows that does not start or end on a leaf boundary keeps its
    partial leaves raw until a neighbouring chunk completes them (:meth:`__add__`), so
    memory, a stream of batches and Dask partitions give the same digest.

    Parameters
    ----------
    k : int
        Probability columns ``K``.
    start : int, default=0
        Position of the chunk's first row.
    roles : sequence of str, default=()
        The role columns present (``"model"``, ``"split"``, ``"group"``).
    """

    def __init__(self, k: int, start: int = 0, roles: Sequence[str] = ()) -> None:
        self.k = int(k)
        self.leaf = leaf_rows(self.k)
        self.start = self.end = int(start)
        self.roles = tuple(r for r in _ROLES if r in roles)
        self.head: _Rows | None = None  # rows before the first leaf boundary of the chunk
        self.leaves: list[bytes] = []
        self.tail: _Rows | None = None  # rows after the last complete leaf
        self.crossed = self.start % self.leaf == 0  # the chunk holds a leaf start

    def update(
        self,
        probs: np.ndarray,
        labels: np.ndarray,
        roles: Mapping[str, np.ndarray | None] | None = None,
    ) -> None:
        """Add the next rows: ``(m, K)`` float64 probabilities, int64 labels, role values."""
        rows = _Rows(
            np.asarray(probs, dtype=np.float64),
            np.asarray(labels, dtype=np.int64),
            {r: np.asarray((roles or {})[r]) for r in self.roles},
        )
        self._append(rows)

    def _append(self, rows: _Rows) -> None:
        m = rows.labels.shape[0]
        pos, end = self.end, self.end + m
        i = 0
        while i < m:
            boundary = (pos // self.leaf + 1) * self.leaf
            take = min(m - i, boundary - pos)
            piece = rows[i : i + take]
            if not self.crossed:
                self.head = piece if self.head is None else self.head + piece
            else:
                self.tail = piece if self.tail is None else self.tail + piece
            pos += take
            i += take
            if pos == boundary:  # a leaf ends here
                if self.crossed and self.tail is not None:
                    self.leaves.append(self.tail.hash())
                    self.tail = None
                self.crossed = True
        self.end = end

    def __add__(self, other: Digest) -> Digest:
        """Join the digests of two adjacent chunks (``other`` starts where this one ends)."""
        if other.start != self.end or other.k != self.k or other.roles != self.roles:
            raise ValueError("only digests of adjacent chunks of the same table join")
        out = Digest(self.k, self.start, self.roles)
        out.head, out.leaves, out.tail = self.head, list(self.leaves), self.tail
        out.crossed, out.end = self.crossed, self.end
        if other.head is not None:  # the end of the leaf open at the join
            out._append(other.head)
        out.leaves.extend(other.leaves)
        if other.tail is not None:
            out.tail = other.tail
        out.crossed = out.crossed or other.crossed
        out.end = other.end
        return out

    def hexdigest(self, names: Sequence[str], binary: bool) -> str:
        """Return the digest of a whole table (this chunk must start at row 0)."""
        if self.start != 0:
            raise ValueError("the digest of a table covers it from its first row")
        leaves = list(self.leaves)
        if self.tail is not None:
            leaves.append(self.tail.hash())
        if self.head is not None:
            leaves.insert(0, self.head.hash())
        h = hashlib.blake2b(digest_size=16)
        _frame(h, f"<f8({self.end}, {self.k}) leaves of {self.leaf}".encode())
        _frame(h, len(leaves).to_bytes(8, "little"))
        for leaf in leaves:
            h.update(leaf)  # fixed size: 16 bytes each
        _strings(h, names)
        _frame(h, b"binary" if binary else b"matrix")
        _strings(h, self.roles)
        return h.hexdigest()


def _digest(
    probs: np.ndarray,
    labels: np.ndarray,
    names: tuple[str, ...],
    binary: bool,
    roles: Mapping[str, np.ndarray | None],
) -> str:
    present = [r for r in _ROLES if roles.get(r) is not None]
    digest = Digest(probs.shape[1], 0, present)
    digest.update(probs, labels, roles)
    return digest.hexdigest(names, binary)


def make_predictions(
    probs: np.ndarray,
    labels: np.ndarray,
    names: tuple[str, ...],
    binary: bool,
    roles: Mapping[str, np.ndarray | None],
    lint: LintReport,
    source: str,
    mapping: dict[str, Any],
    extra: Mapping[str, np.ndarray] | None = None,
) -> Predictions:
    probs = trust(np.ascontiguousarray(probs, dtype=np.float64))
    labels = np.ascontiguousarray(labels, dtype=np.int64)
    labels.setflags(write=False)
    names = tuple(visible(str(n)) for n in names)
    frozen = {}
    for role in ("model", "split", "group"):
        arr = roles.get(role)
        if arr is not None:
            arr = np.asarray(arr, dtype=object)
            arr.setflags(write=False)
        frozen[role] = arr
    kept = {}
    for name, values in (extra or {}).items():
        arr = np.asarray(values).view()  # the loaders hand over fresh arrays
        if arr.shape != labels.shape:
            raise DataError(
                f"The kept column {name!r} has {arr.shape[0]} values for {labels.shape[0]} rows."
            )
        arr.setflags(write=False)
        kept[str(name)] = arr
    digest = _digest(probs, labels, tuple(names), binary, frozen)
    return Predictions(
        probs=probs,
        labels=labels,
        class_names=tuple(names),
        binary=binary,
        model=frozen["model"],
        split=frozen["split"],
        group=frozen["group"],
        lint=lint,
        source=visible(str(source)),
        digest=digest,
        columns=mapping,
        extra=types.MappingProxyType(kept),
        kept_digest=_kept_digest(kept) if kept else "",
    )


def _kept_digest(extra: Mapping[str, np.ndarray]) -> str:
    """Return the digest of the kept columns: their names, kinds and values (framed)."""
    h = hashlib.blake2b(digest_size=16)
    _strings(h, list(extra))
    for values in extra.values():
        _frame(h, values.dtype.str.encode())
        if values.dtype == object:
            _strings(h, values)
        else:
            raw = values.view("<i8") if values.dtype.kind in "mM" else values
            _frame(h, memoryview(np.ascontiguousarray(raw)).cast("B"))
    return h.hexdigest()
