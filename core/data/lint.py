"""The lint report of a prediction file: findings that do not stop the analysis.

:func:`core.data.load_predictions` raises :class:`core.base.errors.DataError` for
problems that make the data unusable (no rows, NaN without ``drop_missing``,
rows not summing to 1 without ``renormalize``, labels out of range, ...) and
records everything else here: conversions it made on the user's behalf
(logits, 1-indexed labels, renormalised rows) and patterns that change how
results should be read (heavy ties, saturated scores, missing classes).

Row numbers in findings are **0-based positions of data rows** (the first row
after the header is row 0), as in ``DataFrame.iloc`` and numpy indexing.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from core.base.errors import render

if TYPE_CHECKING:
    import pandas as pd

#: How many row numbers a finding keeps (the count of affected rows is kept in full).
MAX_ROWS = 10

#: Fewer rows than this is a warning: bins and intervals are too noisy to read.
FEW_ROWS = 100

#: A finding about ties is raised when this share of the scores sits on repeated values ...
TIE_SHARE = 0.5
#: ... counting only the most frequent few values.
TIE_VALUES = 10
#: Distinct score values a merged tie count keeps (see :class:`TieCounts`).
TIE_CAP = 2**16
#: Buckets of the score histogram that rules out heavy ties without counting values.
TIE_BUCKETS = 2**16

SEVERITIES = ("error", "warning", "info")

#: Codes of the findings computed from the arrays alone; they are recomputed on a subset.
VALUE_CODES = frozenset(
    {
        "few-rows",
        "class-never-observed",
        "class-never-predicted",
        "heavy-ties",
        "exact-zero-one",
        "binary-ambiguity",
    }
)


@dataclass(frozen=True)
class LintFinding:
    """One finding of the lint report.

    Attributes
    ----------
    code : str
        Stable identifier, e.g. ``"heavy-ties"`` (for filtering and tests).
    severity : {"error", "warning", "info"}
        ``error``: results are computed but are probably not what was meant;
        ``warning``: results hold but read them with care (or a conversion was
        made for you); ``info``: for the record.
    message : str
        Plain-language explanation, with what to do about it.
    rows : tuple of int
        The first few affected rows (0-based data-row positions).
    columns : tuple of str
        The columns concerned.
    count : int
        Total number of affected rows (``rows`` holds at most :data:`MAX_ROWS`).
    template : str
        The message with the loader options it names marked (:func:`core.base.errors.arg`), for
        :meth:`phrased`; ``message`` is its API phrasing.
    """

    code: str
    severity: str
    message: str
    rows: tuple[int, ...] = ()
    columns: tuple[str, ...] = ()
    count: int = 0
    template: str = field(default="", repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"severity must be one of {SEVERITIES}, not {self.severity!r}")
        if not self.template:
            object.__setattr__(self, "template", self.message)
        object.__setattr__(self, "message", render(self.template))

    def phrased(self, surface: str) -> str:
        """Return the message as ``surface`` says it (``"api"``, ``"cli"`` or ``"ui"``)."""
        return render(self.template, surface)


@dataclass(frozen=True)
class LintReport:
    """All findings of one load, most severe first.

    Attributes
    ----------
    findings : tuple of LintFinding
        The findings.
    """

    findings: tuple[LintFinding, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        order = {s: i for i, s in enumerate(SEVERITIES)}
        ordered = tuple(sorted(self.findings, key=lambda f: order[f.severity]))
        object.__setattr__(self, "findings", ordered)

    @property
    def errors(self) -> tuple[LintFinding, ...]:
        """Findings of severity ``"error"``."""
        return tuple(f for f in self.findings if f.severity == "error")

    @property
    def warnings(self) -> tuple[LintFinding, ...]:
        """Findings of severity ``"warning"``."""
        return tuple(f for f in self.findings if f.severity == "warning")

    @property
    def infos(self) -> tuple[LintFinding, ...]:
        """Findings of severity ``"info"``."""
        return tuple(f for f in self.findings if f.severity == "info")

    @property
    def codes(self) -> tuple[str, ...]:
        """The codes of all findings, in report order."""
        return tuple(f.code for f in self.findings)

    def get(self, code: str) -> LintFinding | None:
        """Return the first finding with this code, or None."""
        return next((f for f in self.findings if f.code == code), None)

    def to_frame(self, surface: str = "api") -> pd.DataFrame:
        """Return the findings as a DataFrame.

        Parameters
        ----------
        surface : {"api", "cli", "ui"}, default "api"
            Whose words the messages use for the loader options they name
            (:meth:`LintFinding.phrased`).

        Returns
        -------
        pandas.DataFrame
            Columns ``severity, code, message, rows, columns, count``; ``rows`` is a
            string of 0-based data-row positions.
        """
        import pandas as pd

        return pd.DataFrame(
            {
                "severity": [f.severity for f in self.findings],
                "code": [f.code for f in self.findings],
                "message": [f.phrased(surface) for f in self.findings],
                "rows": [", ".join(map(str, f.rows)) for f in self.findings],
                "columns": [", ".join(f.columns) for f in self.findings],
                "count": [f.count for f in self.findings],
            },
            columns=["severity", "code", "message", "rows", "columns", "count"],
        )

    def to_records(self) -> list[dict]:
        """Return the findings as JSON-ready dictionaries."""
        return [
            {
                "code": f.code,
                "severity": f.severity,
                "message": f.message,
                "rows": list(f.rows),
                "columns": list(f.columns),
                "count": f.count,
            }
            for f in self.findings
        ]

    def __iter__(self) -> Iterator[LintFinding]:
        return iter(self.findings)

    def __len__(self) -> int:
        return len(self.findings)


def first_rows(mask: np.ndarray, offset: int = 0) -> tuple[tuple[int, ...], int]:
    """Return the first :data:`MAX_ROWS` positions where ``mask`` holds, and the count.

    ``offset`` is added to the positions (a chunk's first row in the whole table).
    """
    where = np.flatnonzero(mask)
    return tuple(offset + int(i) for i in where[:MAX_ROWS]), int(where.size)


def format_rows(rows: Sequence[int], count: int) -> str:
    """Format row positions for a message, e.g. ``"rows 3, 8 (0-based)"``."""
    if not rows:
        return ""
    shown = ", ".join(map(str, rows))
    more = f" and {count - len(rows)} more" if count > len(rows) else ""
    word = "row" if count == 1 else "rows"
    return f"{word} {shown}{more} (0-based data rows)"


def lint_values(
    probs: np.ndarray,
    labels: np.ndarray,
    *,
    binary: bool,
    class_names: Sequence[str],
    prob_columns: Sequence[str] = (),
) -> list[LintFinding]:
    """Return the findings computed from clean arrays alone (classes, ties, saturation).

    Parameters
    ----------
    probs : numpy.ndarray
        ``(n, K)`` valid probability matrix.
    labels : numpy.ndarray
        int64 labels in ``0..K-1``.
    binary : bool
        Whether the input was a single P(y=1) column.
    class_names : sequence of str
        Names of the ``K`` classes.
    prob_columns : sequence of str, optional
        Source column names of the probabilities, for the ``columns`` field.

    Returns
    -------
    list of LintFinding
        Findings with codes in :data:`VALUE_CODES` (those of :meth:`ValueFacts.findings`).
    """
    return ValueFacts.of(probs, labels, binary=binary).findings(class_names, prob_columns)


@dataclass(frozen=True, eq=False)
class TieCounts:
    """How often the most frequent score values occur: the facts behind ``heavy-ties``.

    Exact for one chunk of rows. Merging chunks adds the counts of equal values; when more
    than :data:`TIE_CAP` distinct values remain, the Misra–Gries reduction keeps the
    ``TIE_CAP`` largest (every count drops by the next one's, ``floor``), so a value held by
    more than ``n / (TIE_CAP + 1)`` rows is never lost and a kept count is low by at most
    ``floor`` (mergeable summaries, Agarwal et al. 2012).

    Attributes
    ----------
    values, counts : numpy.ndarray
        Distinct score values (ascending) and their counts (lower bounds after a reduction).
    distinct : int
        Number of distinct values (a lower bound after a reduction).
    floor : int
        Largest amount any count may be low by (0 while exact).
    """

    values: np.ndarray
    counts: np.ndarray
    distinct: int
    floor: int = 0

    @classmethod
    def of(cls, scores: np.ndarray) -> TieCounts:
        """Count the distinct values of one chunk of scores (exactly)."""
        values, counts = np.unique(scores, return_counts=True)
        return cls(values, counts.astype(np.int64), int(values.size))

    def __add__(self, other: TieCounts) -> TieCounts:
        """Merge the counts of two disjoint chunks (see the class docstring)."""
        values, inverse = np.unique(
            np.concatenate([self.values, other.values]), return_inverse=True
        )
        counts = np.bincount(
            inverse.reshape(-1),
            weights=np.concatenate([self.counts, other.counts]),
            minlength=values.size,
        ).astype(np.int64)
        floor = self.floor + other.floor
        exact = floor == 0
        # distinct values of two chunks: exact while neither was reduced
        distinct = int(values.size) if exact else max(self.distinct, other.distinct, values.size)
        if values.size > TIE_CAP:
            cut = int(np.partition(counts, values.size - TIE_CAP - 1)[values.size - TIE_CAP - 1])
            keep = counts > cut
            values, counts = values[keep], counts[keep] - cut
            floor += cut
        return TieCounts(values, counts, distinct, floor)

    def top(self) -> tuple[np.ndarray, np.ndarray]:
        """Return the positions of the :data:`TIE_VALUES` most frequent repeated values."""
        top = np.argsort(self.counts, kind="stable")[::-1][:TIE_VALUES]
        return top, top[self.counts[top] >= 2]


@dataclass(frozen=True, eq=False)
class ValueFacts:
    """Sufficient statistics of the value findings, mergeable over chunks of rows.

    :func:`lint_values` reads the facts of all rows at once; a stream adds the facts of its
    batches (``a + b``, ``b``'s rows after ``a``'s) and reads the same findings, counted over
    all rows, with the first rows of the whole stream.

    Attributes
    ----------
    n : int
        Rows.
    binary : bool
        Whether the input was a single P(y=1) column.
    observed, predicted : numpy.ndarray
        ``(K,)`` label counts and arg-max counts per class.
    buckets : numpy.ndarray
        ``(TIE_BUCKETS,)`` counts of ``floor(score · TIE_BUCKETS)``: when the ten largest
        hold at most ``TIE_SHARE`` of the rows, no ten values can, and ``heavy-ties`` is
        ruled out without counting values.
    ties : TieCounts or None
        Counts of the score values (P(y=1), or the top-label confidence); None when not
        counted (see :attr:`needs_ties`).
    min_score : float
        Smallest score.
    positives : int
        Rows with label 1.
    edge, wrong : int
        Rows with a saturated score; rows whose true class has probability 0.
    saturated_rows : tuple of int
        The first :data:`MAX_ROWS` rows that are either.
    saturated : int
        Rows that are either.
    """

    n: int
    binary: bool
    observed: np.ndarray
    predicted: np.ndarray
    buckets: np.ndarray
    ties: TieCounts | None
    min_score: float
    positives: int
    edge: int
    wrong: int
    saturated_rows: tuple[int, ...]
    saturated: int

    @classmethod
    def of(
        cls,
        probs: np.ndarray,
        labels: np.ndarray,
        *,
        binary: bool,
        offset: int = 0,
        ties: bool | None = None,
    ) -> ValueFacts:
        """Return the facts of one chunk of rows (valid ``(n, K)`` probabilities, labels).

        ``offset`` is the position of the chunk's first row in the whole data. ``ties``:
        count the score values (True), never (False: a stream counts them in a later pass
        if the merged buckets ask for it), or when this chunk's buckets ask for it (None).
        """
        n, k = probs.shape
        scores = probs[:, 1] if binary else probs.max(axis=1)
        if binary:
            predicted = np.zeros(k, dtype=np.int64)
        else:
            predicted = np.bincount(probs.argmax(axis=1), minlength=k)
        min_score = float(scores.min()) if n else np.inf
        # no probability 0 and no score 1: no saturated row, and no row mask to build
        clear = n == 0 or (float(probs.min()) > 0.0 and float(scores.max()) < 1.0)
        edge = wrong = count = 0
        rows: tuple[int, ...] = ()
        if not clear:
            edge_mask = (scores == 0.0) | (scores == 1.0) if binary else scores == 1.0
            if k == 2:  # a select of two columns: cheaper than a gather by row, the same entries
                wrong_mask = np.where(labels == 1, probs[:, 1], probs[:, 0]) == 0.0
            else:
                wrong_mask = probs[np.arange(labels.size), labels] == 0.0
            rows, count = first_rows(edge_mask | wrong_mask)
            edge, wrong = int(np.count_nonzero(edge_mask)), int(np.count_nonzero(wrong_mask))
        buckets = tie_buckets(scores)
        if ties is None:
            ties = not _ties_ruled_out(buckets, n)
        observed = np.bincount(labels, minlength=k)
        return cls(
            n=int(n),
            binary=binary,
            observed=observed,
            predicted=predicted,
            buckets=buckets,
            ties=TieCounts.of(scores) if ties else None,
            min_score=min_score,
            positives=int(observed[1]) if k > 1 else int(np.count_nonzero(labels == 1)),
            edge=edge,
            wrong=wrong,
            saturated_rows=tuple(offset + r for r in rows),
            saturated=count,
        )

    def __add__(self, other: ValueFacts) -> ValueFacts:
        """Merge the facts of two disjoint chunks, ``other``'s rows after these."""
        return ValueFacts(
            n=self.n + other.n,
            binary=self.binary,
            observed=self.observed + other.observed,
            predicted=self.predicted + other.predicted,
            buckets=self.buckets + other.buckets,
            ties=None if self.ties is None or other.ties is None else self.ties + other.ties,
            min_score=min(self.min_score, other.min_score),
            positives=self.positives + other.positives,
            edge=self.edge + other.edge,
            wrong=self.wrong + other.wrong,
            saturated_rows=tuple(sorted(self.saturated_rows + other.saturated_rows))[:MAX_ROWS],
            saturated=self.saturated + other.saturated,
        )

    def findings(
        self, class_names: Sequence[str], prob_columns: Sequence[str] = ()
    ) -> list[LintFinding]:
        """Return the value findings (codes in :data:`VALUE_CODES`)."""
        n, binary = self.n, self.binary
        k = self.observed.shape[0]
        cols = tuple(prob_columns)
        out: list[LintFinding] = []
        if n < FEW_ROWS:
            out.append(
                LintFinding(
                    "few-rows",
                    "warning",
                    f"Only {n} rows. With fewer than {FEW_ROWS} predictions, bin frequencies and "
                    "calibration errors are very noisy: read the intervals, use few bins, and "
                    "prefer the debiased or kernel estimators.",
                    count=n,
                )
            )
        observed = self.observed
        never_obs = [class_names[j] for j in range(k) if observed[j] == 0]
        if binary:
            if never_obs:
                out.append(
                    LintFinding(
                        "class-never-observed",
                        "warning",
                        f"Every label is {class_names[int(observed[0] == 0)]!r}: class "
                        f"{never_obs[0]!r} never occurs. Calibration of P(y=1) can still be "
                        "measured, but classwise views and tests are one-sided; check that the "
                        "right label column was used.",
                        columns=cols,
                    )
                )
        else:
            never_pred = [class_names[j] for j in range(k) if self.predicted[j] == 0]
            if never_obs:
                out.append(
                    LintFinding(
                        "class-never-observed",
                        "warning",
                        f"{len(never_obs)} of {k} classes never occur in the labels: "
                        f"{_name_list(never_obs)}. Their classwise calibration errors rest on "
                        "all-negative outcomes; check that labels and probability columns match.",
                        columns=tuple(cols[j] for j in range(len(cols)) if observed[j] == 0),
                    )
                )
            if never_pred:
                out.append(
                    LintFinding(
                        "class-never-predicted",
                        "info",
                        f"{len(never_pred)} of {k} classes are never the predicted (arg-max) "
                        f"class: {_name_list(never_pred)}. Top-label views say nothing about "
                        "them; use the classwise lens to see their calibration.",
                        columns=tuple(cols[j] for j in range(len(cols)) if self.predicted[j] == 0),
                    )
                )
        out.extend(self._tie_findings(cols))
        out.extend(self._saturation_findings(cols))
        if binary and n >= 10 and self.min_score >= 0.5:
            rate = self.positives / n
            # all P(y=1) >= 0.5 but mostly negatives: under either reading something is off,
            # and "confidence of the predicted class" is by far the likelier one
            severity = "error" if rate < 0.5 else "warning"
            out.append(
                LintFinding(
                    "binary-ambiguity",
                    severity,
                    f"Every score in the probability column is at least 0.5 (min "
                    f"{self.min_score:.3g}) while {rate:.0%} of the labels are positive. That "
                    "looks like the confidence of the predicted class rather than P(y=1). If so, "
                    "the binary lens is wrong: load P(y=1) itself or the full probability matrix "
                    "(one column per class).",
                    columns=cols,
                    count=n,
                )
            )
        return out

    @property
    def needs_ties(self) -> bool:
        """Whether the findings need the value counts, which were not counted."""
        return self.ties is None and not _ties_ruled_out(self.buckets, self.n)

    def _tie_findings(self, cols: tuple[str, ...]) -> list[LintFinding]:
        n, ties = self.n, self.ties
        if n < 2 * TIE_VALUES or _ties_ruled_out(self.buckets, n):
            return []
        if ties is None:
            raise ValueError("the value counts are needed: merge facts counted with ties=True")
        _, top = ties.top()
        share = ties.counts[top].sum() / n
        if share <= TIE_SHARE:
            return []
        what = "P(y=1)" if self.binary else "top-label confidence"
        examples = ", ".join(f"{ties.values[i]:.6g} (×{ties.counts[i]})" for i in top[:4])
        distinct = f"{ties.distinct}" if ties.floor == 0 else f"more than {ties.distinct}"
        return [
            LintFinding(
                "heavy-ties",
                "warning",
                f"{share:.0%} of the {what} scores take one of only {top.size} repeated values "
                f"({distinct} distinct values in all; most frequent: {examples}). The model "
                "outputs discrete scores (a tree, a binned or rounded model). Equal-mass bins "
                "split tied scores arbitrarily: use the 'discrete' binning or tie_policy='keep'.",
                columns=cols,
                count=int(ties.counts[top].sum()),
            )
        ]

    def _saturation_findings(self, cols: tuple[str, ...]) -> list[LintFinding]:
        if not self.edge and not self.wrong:
            return []
        what = (
            "a P(y=1) of exactly 0 or 1" if self.binary else "a top-label confidence of exactly 1"
        )
        tail = ""
        if self.wrong:
            tail = (
                f" {self.wrong} {'row gives' if self.wrong == 1 else 'rows give'} the true "
                "class a probability of exactly 0, so the "
                "log loss is infinite without clipping (Calibscope clips at 1e-15)."
            )
        return [
            LintFinding(
                "exact-zero-one",
                "info",
                f"{self.edge} {'row has' if self.edge == 1 else 'rows have'} {what} (saturated "
                "or rounded scores, e.g. float32 "
                "softmax). "
                "Libraries disagree on the bin of a score of exactly 1.0 (some add an extra bin); "
                "Calibscope puts it in the last bin." + tail,
                rows=self.saturated_rows,
                columns=cols,
                count=self.saturated,
            )
        ]


def tie_buckets(scores: np.ndarray) -> np.ndarray:
    """Return the counts of ``floor(score · TIE_BUCKETS)`` (see :class:`ValueFacts`)."""
    idx = np.minimum((scores * TIE_BUCKETS).astype(np.intp), TIE_BUCKETS - 1)
    return np.bincount(idx, minlength=TIE_BUCKETS)


def _ties_ruled_out(buckets: np.ndarray, n: int) -> bool:
    top = np.partition(buckets, buckets.size - TIE_VALUES)[-TIE_VALUES:]
    return bool(top.sum() <= TIE_SHARE * n)


def _name_list(names: Sequence[str], limit: int = 8) -> str:
    shown = ", ".join(repr(x) for x in names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")
