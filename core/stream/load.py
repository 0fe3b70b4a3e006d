"""Loading a stream: the columns, the conversions and the labels, decided once for all rows.

:func:`core.load_predictions` decides how to read a table from all of it at once: which
columns hold what, whether the scores are logits, how label values map to classes. A stream
decides the same things from facts that merge over batches, so the rows come out as the
in-memory loader would give them:

- the columns, from the first batch (pass ``prob_columns`` / ``label_column`` to pin them);
- whether the scores are logits, from :class:`core.data.probabilities.ScoreFacts` of all
  rows;
- the class of every label value, from the distinct label values of all rows
  (:class:`LabelFacts`), through the in-memory encoder itself.

A batch is converted under the plan decided so far (:class:`Plan`); when a later batch
changes a decision (negative scores that make them logits, a label value that shifts the
classes), the reader starts again under the new plan (:func:`read_stream`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from core.base.errors import DataError, arg
from core.base.names import visible
from core.data.columns import (
    find_label_column,
    find_prob_columns,
    find_roles,
    repeated_names,
)
from core.data.labels import encode_labels, label_series, resolve_class_names
from core.data.lint import MAX_ROWS, LintFinding, first_rows, format_rows
from core.data.loader import kept_names, kept_values, models_of, not_ignored
from core.data.probabilities import (
    ScoreFacts,
    clipped_finding,
    logits_finding,
    numeric_matrix,
    renormalized_finding,
    to_probabilities,
)
from core.data.tables import LoadedTable
from core.data.text import kept_row, role_values
from core.stream.sources import Batch, Layout, place, read_batches
from core.stream.threads import ahead

ROLES = ("model", "split", "group")

#: Distinct labels in a batch up to which the first row of each is found by one search each.
FEW_VALUES = 16


@dataclass(frozen=True)
class LoadOptions:
    """How to read the rows: the options of :func:`core.load_predictions`.

    Attributes
    ----------
    prob_columns : tuple of str or None
        The probability (or logit) columns, in class order (default: inferred).
    label_column : str or int or None
        The label column (default: inferred).
    positive_class : optional
        For one probability column: the label value it is the probability of.
    logits : {"auto", True, False}
        Whether the columns are logits.
    renormalize, drop_missing : bool
        As in :func:`core.load_predictions`.
    class_names : tuple of str or None
        Class names for a headerless file.
    keep_columns : tuple of str
        Further columns read with every batch (:attr:`Rows.extra`), as
        ``load_predictions(..., keep_columns=[...])`` keeps them (a time column, say).
    """

    prob_columns: tuple[str, ...] | None = None
    label_column: str | int | None = None
    positive_class: Any = None
    logits: bool | str = "auto"
    renormalize: bool = False
    drop_missing: bool = False
    class_names: tuple[str, ...] | None = None
    keep_columns: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.logits not in ("auto", True, False):
            raise DataError(f"logits must be 'auto', True or False, not {self.logits!r}.")
        if isinstance(self.prob_columns, str):
            object.__setattr__(self, "prob_columns", (self.prob_columns,))
        if isinstance(self.keep_columns, str):
            object.__setattr__(self, "keep_columns", (self.keep_columns,))
        object.__setattr__(self, "keep_columns", tuple(self.keep_columns))


# --------------------------------------------------------------------------- facts


@dataclass(frozen=True, eq=False)
class LabelFacts:
    """The distinct label values of chunks of rows, in order of first appearance.

    Attributes
    ----------
    values : numpy.ndarray
        Object array of the distinct values.
    counts : numpy.ndarray
        Rows holding each.
    first : numpy.ndarray
        The first row holding each (position in the stream).
    """

    values: np.ndarray
    counts: np.ndarray
    first: np.ndarray

    @classmethod
    def of(cls, labels: Any, offset: int, positions: np.ndarray | None = None) -> LabelFacts:
        """Return the facts of one chunk of label values.

        ``offset`` is the stream position of the first value, or ``positions`` those of
        every value (when rows were dropped).
        """
        arr = np.asarray(labels)
        m = arr.shape[0]
        if arr.dtype.kind in "iu" and m and int(arr.max()) - int(arr.min()) < max(4 * m, 1 << 16):
            # whole numbers in a short range: count them densely, no hashing
            lo = int(arr.min())
            codes = arr.astype(np.int64)
            codes -= lo
            counts = np.bincount(codes)
            present = np.flatnonzero(counts)
            first_at = np.full(counts.shape[0], m, dtype=np.int64)
            if present.size <= FEW_VALUES:  # a search per value beats a scatter over the rows
                for v in present:
                    first_at[v] = int(np.argmax(arr == v + lo))
            else:
                np.minimum.at(first_at, codes, np.arange(m, dtype=np.int64))
            order = present[np.argsort(first_at[present], kind="stable")]
            uniques = order + lo
            counts, first = counts[order].astype(np.int64), first_at[order]
        else:
            import pandas as pd

            codes, uniques = pd.factorize(arr)
            k = len(uniques)
            counts = np.bincount(codes, minlength=k).astype(np.int64)
            first = np.full(k, m, dtype=np.int64)
            np.minimum.at(first, codes, np.arange(m, dtype=np.int64))
        first = first + offset if positions is None else positions[first]
        values = np.empty(len(uniques), dtype=object)
        values[:] = [_py(v) for v in uniques]
        return cls(values, counts, first)

    def __add__(self, other: LabelFacts) -> LabelFacts:
        """Merge the facts of two chunks, ``other``'s rows after these."""
        index = {_key(v): i for i, v in enumerate(self.values)}
        values = list(self.values)
        counts = list(self.counts)
        first = list(self.first)
        for v, c, f in zip(other.values, other.counts, other.first, strict=True):
            i = index.get(_key(v))
            if i is None:
                index[_key(v)] = len(values)
                values.append(v)
                counts.append(c)
                first.append(f)
            else:
                counts[i] += c
                first[i] = min(first[i], f)
        return LabelFacts(
            np.asarray(values, dtype=object),
            np.asarray(counts, dtype=np.int64),
            np.asarray(first, dtype=np.int64),
        )

    def rows_of(self, mask: np.ndarray) -> tuple[tuple[int, ...], int]:
        """Where the values flagged by ``mask`` occur: their first rows and their row count."""
        rows = np.sort(self.first[np.asarray(mask, dtype=bool)])[:MAX_ROWS]
        return tuple(int(r) for r in rows), int(self.counts[np.asarray(mask, dtype=bool)].sum())


def _key(value: Any) -> Any:
    return value


def _py(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


@dataclass(frozen=True)
class Tally:
    """A finding counted over chunks: rows affected, the first of them, the largest deviation."""

    count: int = 0
    rows: tuple[int, ...] = ()
    largest: float = 0.0

    def __add__(self, other: Tally) -> Tally:
        return Tally(
            self.count + other.count,
            tuple(sorted(self.rows + other.rows))[:MAX_ROWS],
            max(self.largest, other.largest),
        )


@dataclass(frozen=True, eq=False)
class LoadFacts:
    """Facts of the rows read so far that decide and report the load.

    Attributes
    ----------
    n : int
        Rows read (kept).
    scores : ScoreFacts
        What decides the reading of the scores.
    labels : LabelFacts
        The distinct label values.
    missing, clipped, renormalized : Tally
        Rows dropped for missing values, clipped to [0, 1], renormalised.
    """

    n: int = 0
    scores: ScoreFacts = field(default_factory=ScoreFacts)
    labels: LabelFacts | None = None
    missing: Tally = field(default_factory=Tally)
    clipped: Tally = field(default_factory=Tally)
    renormalized: Tally = field(default_factory=Tally)

    def __add__(self, other: LoadFacts) -> LoadFacts:
        labels = (
            other.labels
            if self.labels is None
            else self.labels
            if other.labels is None
            else self.labels + other.labels
        )
        return LoadFacts(
            self.n + other.n,
            self.scores + other.scores,
            labels,
            self.missing + other.missing,
            self.clipped + other.clipped,
            self.renormalized + other.renormalized,
        )


# --------------------------------------------------------------------------- the plan


@dataclass(frozen=True, eq=False)
class LabelMap:
    """Label value → class index, decided from the distinct values of all rows.

    Attributes
    ----------
    values : numpy.ndarray
        The distinct values known.
    classes : numpy.ndarray
        The class of each.
    names : tuple of str
        Class names.
    positive : object
        The positive class of a binary column (None when implied).
    findings : tuple of LintFinding
        Notes of the encoding (1-indexed labels, the value read as positive, ...).
    """

    values: np.ndarray
    classes: np.ndarray
    names: tuple[str, ...]
    positive: Any
    findings: tuple[LintFinding, ...]

    def apply(self, labels: Any) -> tuple[np.ndarray, np.ndarray]:
        """Return the class of every label (-1 for a value not known) and the unknown mask."""
        arr = np.asarray(labels)
        table = self._byte_table(arr)
        if table is not None:  # one lookup by the labels' bit patterns
            y = table[arr.view(f"u{arr.dtype.itemsize}")]
            return y, y < 0
        at = self._positions(arr)
        unknown = at < 0
        return np.where(unknown, -1, self.classes[np.maximum(at, 0)]).astype(np.int64), unknown

    def _byte_table(self, arr: np.ndarray) -> np.ndarray | None:
        """Return the class (-1: unknown) of every bit pattern of 1- or 2-byte integer labels.

        None for other labels, or known values that are not all integers (read by
        :meth:`_positions`, whose integer path gives the same classes).
        """
        if arr.dtype.kind not in "iu" or arr.dtype.itemsize > 2 or not arr.size:
            return None
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in self.values):
            return None
        info = np.iinfo(arr.dtype)
        bits = 8 * arr.dtype.itemsize
        table = np.full(1 << bits, -1, dtype=np.int64)
        for v, c in zip(self.values, self.classes, strict=True):
            if info.min <= v <= info.max:
                table[v % (1 << bits)] = c  # the unsigned view of v
        return table

    def _positions(self, arr: np.ndarray) -> np.ndarray:
        """Position of every label among the known values (-1 where unknown)."""
        ints = [v for v in self.values if isinstance(v, int) and not isinstance(v, bool)]
        if arr.dtype.kind in "iu" and arr.size and len(ints) == len(self.values):
            lo, hi = min(ints), max(ints)
            if hi - lo < 1 << 20:  # a lookup table over the range of the known values
                table = np.full(hi - lo + 1, -1, dtype=np.int64)
                table[np.asarray(ints, dtype=np.int64) - lo] = np.arange(len(ints))
                shifted = arr.astype(np.int64) - lo
                inside = (shifted >= 0) & (shifted <= hi - lo)
                return np.where(inside, table[np.clip(shifted, 0, hi - lo)], -1)
        numeric = [v for v in self.values if isinstance(v, int | float) and not isinstance(v, bool)]
        if arr.dtype.kind in "iuf" and len(numeric) == len(self.values):
            # numbers: one sort of the few known values, a binary search per label
            keys = np.asarray(self.values, dtype=np.float64)
            order = np.argsort(keys, kind="stable")
            at = np.searchsorted(keys[order], arr)
            at = np.minimum(at, keys.size - 1)
            hit = keys[order][at] == arr
            return np.where(hit, order[at], -1)
        import pandas as pd

        index = pd.Index(self.values, dtype=object)
        return index.get_indexer(pd.Index(arr.astype(object), dtype=object))

    def same(self, other: LabelMap) -> bool:
        """Whether both give every value known to this one the same class and names."""
        if self.names != other.names or str(self.positive) != str(other.positive):
            return False
        y, unknown = other.apply(self.values)
        return not unknown.any() and np.array_equal(y, self.classes)


@dataclass(frozen=True, eq=False)
class Plan:
    """How every batch of a stream is read.

    Attributes
    ----------
    source : str
        The source as given.
    layout : Layout
        Columns of the parts.
    label_column : str
        The label column.
    prob_columns : tuple of str
        Probability (or logit) columns in class order.
    roles : dict
        Role (``model``, ``split``, ``group``) → column.
    options : LoadOptions
        The load options.
    scores : ScoreFacts
        The facts the reading of the scores was decided on.
    labels : LabelMap or None
        The label encoding (None before any label was seen).
    column_findings : tuple of LintFinding
        Notes of the column inference.
    kept : tuple of str
        The columns of ``options.keep_columns`` as the files name them.
    """

    source: str
    layout: Layout
    label_column: str
    prob_columns: tuple[str, ...]
    roles: dict[str, str]
    options: LoadOptions
    scores: ScoreFacts = field(default_factory=ScoreFacts)
    labels: LabelMap | None = None
    column_findings: tuple[LintFinding, ...] = ()
    kept: tuple[str, ...] = ()

    @property
    def k(self) -> int:
        """Probability columns of the table (1 for a binary P(y=1) column)."""
        return len(self.prob_columns)

    @property
    def binary(self) -> bool:
        """Whether the table has one P(y=1) column."""
        return self.k == 1

    @property
    def logits(self) -> bool:
        """Whether the scores are read as logits."""
        return self.scores.reads_logits(self.k, self.options.logits)

    @property
    def columns(self) -> list[str]:
        """The columns to read."""
        cols = [self.label_column, *self.prob_columns, *self.roles.values(), *self.kept]
        return list(dict.fromkeys(cols))

    @property
    def class_names(self) -> tuple[str, ...]:
        """Class names (those of the label encoding once known)."""
        if self.labels is not None:
            return tuple(map(visible, self.labels.names))
        names = resolve_class_names(
            self.prob_columns, self.layout.headerless, self.options.class_names, self.k
        )
        return tuple(map(visible, names))

    def decided(self, facts: LoadFacts) -> Plan:
        """Return the plan the facts of all rows read so far decide."""
        labels = self.labels
        if facts.labels is not None:
            labels = label_map(self, facts.labels)
        return replace(self, scores=facts.scores, labels=labels)

    @property
    def reading(self) -> tuple[bool, bool]:
        """What the score facts decide: logits, and whether negatives forbid renormalising."""
        return self.logits, self.options.renormalize and self.scores.negative

    def same(self, other: Plan) -> bool:
        """Whether both plans read every row known to this one the same way."""
        if self.reading != other.reading:
            return False
        if self.labels is None or other.labels is None:
            return self.labels is other.labels
        return self.labels.same(other.labels)

    def mapping(self) -> dict[str, Any]:
        """Return the column mapping, as :attr:`core.data.Predictions.columns` holds it."""
        return {
            "label": self.label_column,
            "probs": list(self.prob_columns),
            **{r: self.roles.get(r) for r in ROLES},
            "positive_class": None if self.labels is None else self.labels.positive,
            "logits": self.logits,
        }

    def findings(self, facts: LoadFacts) -> list[LintFinding]:
        """Return the load findings of all rows (those :func:`core.load_predictions` gives)."""
        out = list(self.layout.findings) + list(self.column_findings)
        cols = self.prob_columns
        if facts.missing.count:
            out.append(
                LintFinding(
                    "missing-values",
                    "warning",
                    f"Dropped {facts.missing.count} rows with a missing, NaN or infinite "
                    "probability or label (drop_missing=True). Results describe the remaining "
                    "rows only.",
                    rows=facts.missing.rows,
                    columns=tuple(cols) + (self.label_column,),
                    count=facts.missing.count,
                )
            )
        if self.logits:
            out.append(logits_finding(facts.scores, cols, self.options.logits, facts.n))
        if facts.clipped.count:
            out.append(clipped_finding(facts.clipped.rows, facts.clipped.count, cols))
        if facts.renormalized.count:
            r = facts.renormalized
            out.append(renormalized_finding(r.rows, r.count, r.largest, cols))
        if self.labels is not None:
            out += list(self.labels.findings)
        return out


def plan_from(first: Batch, lay: Layout, options: LoadOptions, source: str) -> Plan:
    """Infer the columns from the first batch, as :func:`core.load_predictions` would."""
    frame = first.frame
    table = LoadedTable(frame, lay.headerless, source, [])
    roles = {} if lay.headerless else find_roles(list(frame.columns))
    used = set(roles.values())
    label_name = find_label_column(frame, table, options.label_column, used)
    used.add(label_name)
    labels = label_series(frame[label_name])
    prob_names, notes = find_prob_columns(
        frame,
        options.prob_columns,
        used,
        labels,
        options.logits,
        lay.headerless,
        repeated_names(lay.findings),
    )
    kept = kept_names(lay.columns, options.keep_columns)
    return Plan(
        source=source,
        layout=lay,
        label_column=label_name,
        prob_columns=tuple(prob_names),
        roles=roles,
        options=options,
        column_findings=tuple(not_ignored(notes, kept)),
        kept=kept,
    )


def label_map(plan: Plan, facts: LabelFacts) -> LabelMap:
    """Decide the class of every distinct label value with the in-memory encoder."""
    names = resolve_class_names(
        plan.prob_columns, plan.layout.headerless, plan.options.class_names, plan.k
    )
    values = label_series(facts.values)
    y, names, positive, notes = encode_labels(
        values,
        names,
        plan.binary,
        plan.options.positive_class,
        plan.prob_columns,
        plan.label_column,
        plan.layout.columns,
        rows_of=facts.rows_of,
    )
    return LabelMap(
        facts.values, np.asarray(y, dtype=np.int64), tuple(names), positive, tuple(notes)
    )


# --------------------------------------------------------------------------- rows


@dataclass(frozen=True, eq=False)
class Rows:
    """The rows of one batch, read under a plan.

    Attributes
    ----------
    offset : int
        Stream position of the first row (of the batch, before any row was dropped).
    positions : numpy.ndarray or None
        Stream positions of the rows kept when rows were dropped (None: all kept).
    probs : numpy.ndarray
        ``(m, K)`` probabilities (two columns for a binary table).
    labels : numpy.ndarray
        ``(m,)`` class indices.
    roles : dict
        Role → values (str object arrays).
    facts : LoadFacts
        The batch's facts.
    plan : Plan or None
        The plan the rows were read under.
    extra : dict
        Kept column → values (:func:`core.data.loader.kept_values`: numbers, times as
        ``datetime64[ns]``, or strings), of the rows kept.
    part : str
        The file the rows come from.
    start : int
        Position of the batch's first row in that file.
    """

    offset: int
    positions: np.ndarray | None
    probs: np.ndarray
    labels: np.ndarray
    roles: dict[str, np.ndarray]
    facts: LoadFacts
    plan: Plan | None = None
    extra: dict[str, np.ndarray] = field(default_factory=dict)
    part: str = ""
    start: int = 0

    def position(self, i: int) -> int:
        """Return the stream position of row ``i`` of these rows."""
        return int(self.offset + i if self.positions is None else self.positions[i])

    def where(self, i: int) -> str:
        """Say where row ``i`` of these rows is: the file and the row in that file."""
        return place(self.part, self.position(i) - self.offset + self.start)


def batch_facts(
    batch: Batch, plan: Plan, *, decide: bool = True
) -> tuple[LoadFacts, Any, Any, np.ndarray | None]:
    """Return a batch's facts with its raw scores, label values and kept rows.

    Missing values raise at once (naming the file and row) unless ``drop_missing``. Without
    ``decide`` (a plan decided from all rows), the facts that decide a plan are not collected.
    """
    frame = batch.frame
    offset = batch.offset
    P = numeric_matrix(frame, plan.prob_columns, offset=offset)
    labels = frame[plan.label_column]
    # a finite sum has finite terms, and integer labels are never missing: the row masks
    # are built only when one of them may hold
    exact = isinstance(labels.dtype, np.dtype) and labels.dtype.kind in "iub"
    maybe = not (np.isfinite(P.sum()) and exact)
    bad = (~np.isfinite(P).all(axis=1) | labels.isna().to_numpy()) if maybe else None
    keep = None
    missing = Tally()
    if bad is not None and bad.any():
        rows, count = first_rows(bad, offset)
        if not plan.options.drop_missing:
            col = plan.roles.get("model")
            where = "" if col is None else models_of(frame[col], bad)
            raise DataError(
                f"{batch.where(rows[0])}: {count} of this batch's rows{where} "
                f"{'has' if count == 1 else 'have'} a missing, NaN or infinite probability or "
                f"label ({format_rows(rows, count)} of the stream). Fix or remove them, or load "
                f"with {arg('drop_missing')} to drop them.",
                rows=rows,
            )
        missing = Tally(count, rows)
        keep = ~bad
        P = P[keep]
        labels = labels[keep]
    if not decide:
        return LoadFacts(n=int(P.shape[0]), scores=plan.scores, missing=missing), P, labels, keep
    facts = LoadFacts(
        n=int(P.shape[0]),
        scores=ScoreFacts.of(P),
        labels=LabelFacts.of(
            labels.to_numpy(), offset, None if keep is None else np.flatnonzero(keep) + offset
        ),
        missing=missing,
    )
    return facts, P, labels, keep


def read_rows(batch: Batch, plan: Plan, facts: LoadFacts, P: Any, labels: Any, keep: Any) -> Rows:
    """Convert a batch's raw scores and labels under the plan (errors name file and row)."""
    offset = batch.offset
    positions = None if keep is None else np.flatnonzero(keep) + offset
    try:
        probs, notes = to_probabilities(
            P,
            plan.prob_columns,
            plan.logits,
            plan.options.renormalize,
            facts=plan.scores,
            offset=offset,
        )
    except DataError as exc:
        raise _located(exc, batch, positions) from None
    clipped = renormalized = Tally()
    for note in notes:
        if note.code == "clipped":
            clipped = Tally(note.count, _stream_rows(note.rows, offset, positions))
        elif note.code == "renormalized":
            dev = float(np.abs(P.sum(axis=1) - 1.0).max())
            renormalized = Tally(note.count, _stream_rows(note.rows, offset, positions), dev)
    assert plan.labels is not None
    y, unknown = plan.labels.apply(labels.to_numpy())
    if unknown.any():  # only under a plan that an earlier restart has not caught up with
        raise RuntimeError("label value outside the plan")
    if plan.binary:
        p = probs[:, 0]
        probs = np.empty((p.shape[0], 2))
        np.subtract(1.0, p, out=probs[:, 0])
        probs[:, 1] = p
    roles = {}
    for role, col in plan.roles.items():
        arr = batch.frame[col].to_numpy(dtype=object)
        roles[role] = role_values(
            arr[keep] if keep is not None else arr,
            role,
            lambda i: batch.where(batch.offset + kept_row(keep, i)),
        )
    extra = {}
    if plan.kept:
        for col in plan.kept:
            series = batch.frame[col]
            extra[col] = kept_values(series[keep] if keep is not None else series)
    facts = replace(facts, clipped=clipped, renormalized=renormalized)
    return Rows(
        offset, positions, probs, y, roles, facts, plan, extra, batch.part.name, batch.start
    )


def _stream_rows(rows: Sequence[int], offset: int, positions: np.ndarray | None) -> tuple[int, ...]:
    # rows of the kept matrix (shifted by offset) → stream positions
    if positions is None:
        return tuple(rows)
    return tuple(int(positions[r - offset]) for r in rows)


def _located(exc: DataError, batch: Batch, positions: np.ndarray | None) -> DataError:
    if not exc.rows:
        return DataError(f"{batch.part.name}: {exc}")
    first = exc.rows[0]
    row = first if positions is None else int(positions[first - batch.offset])
    return DataError(f"{batch.where(row)}: {exc}", rows=exc.rows)


# --------------------------------------------------------------------------- the reader


def read_stream(
    parts: Sequence[Any],
    lay: Layout,
    plan: Plan,
    start: Any,
    visit: Any,
    *,
    batch_rows: int,
) -> tuple[Plan, LoadFacts, Any]:
    """Read every row under the plan the facts of all rows decide; visit each batch's rows.

    The plan is decided from the rows read so far and revised as batches come in. If a
    revision reads earlier rows differently (or a batch cannot be read under the plan of
    the moment), the reader goes on collecting facts only, decides the plan of all rows at
    the end and reads everything once more under it (at most one restart: that plan has
    seen every value).

    Parameters
    ----------
    parts, lay
        The stream's parts and layout.
    plan : Plan
        The columns (:func:`plan_from`); a plan decided from all rows is never revised.
    start : callable
        ``start() -> state``: a fresh state for a (re)start.
    visit : callable
        ``visit(state, rows: Rows) -> None``.
    batch_rows : int
        Rows per batch.

    Returns
    -------
    plan : Plan
        The plan of all rows.
    facts : LoadFacts
        The facts of all rows.
    state
        The state after every batch was visited under that plan.

    Raises
    ------
    DataError
        For rows that cannot be read under the plan of all rows, or labels that cannot be
        encoded; naming the file and row where it can.
    """
    final = plan.labels is not None
    while True:
        state = start()
        facts = LoadFacts()
        current = plan
        pending: DataError | None = None
        stale = False
        # the next batch is read and checked in a thread while this one is visited (a
        # batch's facts depend on the columns and options only, which no revision changes)
        batches = read_batches(parts, lay, current.columns, batch_rows=batch_rows)
        checked = ((b, batch_facts(b, plan, decide=not final)) for b in batches)
        for batch, (f, P, labels, keep) in ahead(checked):
            facts = facts + f
            if stale or pending is not None:
                continue  # facts only: the rows are read again under the plan of all rows
            try:
                if not final and _revise(current, f, facts):
                    revised = current.decided(facts)
                    if not current.same(revised):
                        stale = True
                        continue
                    current = revised
                rows = read_rows(batch, current, f, P, labels, keep)
            except DataError as exc:
                if final:
                    raise
                pending = exc
                continue
            visit(state, rows)
        if facts.n == 0:
            raise DataError(f"{plan.source} has no data rows.")
        whole = current if final else current.decided(facts)  # raises for bad labels
        if not stale and pending is None and (final or current.same(whole)):
            return whole, facts, state
        if final and pending is not None:
            raise pending
        plan, final = whole, True


def _revise(plan: Plan, batch: LoadFacts, facts: LoadFacts) -> bool:
    if plan.labels is None:
        return True
    if replace(plan, scores=facts.scores).reading != plan.reading:
        return True
    assert batch.labels is not None
    _, unknown = plan.labels.apply(batch.labels.values)
    return bool(unknown.any())
