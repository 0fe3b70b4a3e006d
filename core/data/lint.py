"""The lint report of a prediction file: findings that do not stop the analysis.

:func:`core.data.load_predictions` raises :class:`core.errors.DataError` for
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
    """

    code: str
    severity: str
    message: str
    rows: tuple[int, ...] = ()
    columns: tuple[str, ...] = ()
    count: int = 0

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"severity must be one of {SEVERITIES}, not {self.severity!r}")


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

    def to_frame(self) -> pd.DataFrame:
        """Return the findings as a DataFrame.

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
                "message": [f.message for f in self.findings],
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


def first_rows(mask: np.ndarray) -> tuple[tuple[int, ...], int]:
    """Return the first :data:`MAX_ROWS` positions where ``mask`` holds, and the count."""
    where = np.flatnonzero(mask)
    return tuple(int(i) for i in where[:MAX_ROWS]), int(where.size)


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
        Findings with codes in :data:`VALUE_CODES`.
    """
    n, k = probs.shape
    cols = tuple(prob_columns)
    out: list[LintFinding] = []
    if n < FEW_ROWS:
        out.append(
            LintFinding(
                "few-rows",
                "warning",
                f"Only {n} rows. With fewer than {FEW_ROWS} predictions, bin frequencies and "
                "calibration errors are very noisy: read the intervals, use few bins, and prefer "
                "the debiased or kernel estimators.",
                count=n,
            )
        )
    observed = np.bincount(labels, minlength=k)
    never_obs = [class_names[j] for j in range(k) if observed[j] == 0]
    scores = probs[:, 1] if binary else probs.max(axis=1)
    if binary:
        if never_obs:
            out.append(
                LintFinding(
                    "class-never-observed",
                    "warning",
                    f"Every label is {class_names[int(observed[0] == 0)]!r}: class "
                    f"{never_obs[0]!r} never occurs. Calibration of P(y=1) can still be measured, "
                    "but classwise views and tests are one-sided; check that the right label "
                    "column was used.",
                    columns=cols,
                )
            )
    else:
        predicted = np.bincount(probs.argmax(axis=1), minlength=k)
        never_pred = [class_names[j] for j in range(k) if predicted[j] == 0]
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
                    f"{len(never_pred)} of {k} classes are never the predicted (arg-max) class: "
                    f"{_name_list(never_pred)}. Top-label views say nothing about them; use the "
                    "classwise lens to see their calibration.",
                    columns=tuple(cols[j] for j in range(len(cols)) if predicted[j] == 0),
                )
            )
    out.extend(_tie_findings(scores, binary, cols))
    out.extend(_saturation_findings(probs, labels, scores, binary, cols))
    if binary and n >= 10 and scores.min() >= 0.5:
        rate = float(labels.mean())
        # all P(y=1) >= 0.5 but mostly negatives: under either reading something is off,
        # and "confidence of the predicted class" is by far the likelier one
        severity = "error" if rate < 0.5 else "warning"
        out.append(
            LintFinding(
                "binary-ambiguity",
                severity,
                f"Every score in the probability column is at least 0.5 (min {scores.min():.3g}) "
                f"while {rate:.0%} of the labels are positive. That looks like the confidence of "
                "the predicted class rather than P(y=1). If so, the binary lens is wrong: load "
                "P(y=1) itself or the full probability matrix (one column per class).",
                columns=cols,
                count=n,
            )
        )
    return out


def _name_list(names: Sequence[str], limit: int = 8) -> str:
    shown = ", ".join(repr(x) for x in names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def _tie_findings(scores: np.ndarray, binary: bool, cols: tuple[str, ...]) -> list[LintFinding]:
    n = scores.size
    if n < 2 * TIE_VALUES:
        return []
    values, counts = np.unique(scores, return_counts=True)
    top = np.argsort(counts, kind="stable")[::-1][:TIE_VALUES]
    top = top[counts[top] >= 2]
    share = counts[top].sum() / n
    if share <= TIE_SHARE:
        return []
    what = "P(y=1)" if binary else "top-label confidence"
    examples = ", ".join(f"{values[i]:.6g} (×{counts[i]})" for i in top[:4])
    return [
        LintFinding(
            "heavy-ties",
            "warning",
            f"{share:.0%} of the {what} scores take one of only {top.size} repeated values "
            f"({values.size} distinct values in all; most frequent: {examples}). The model "
            "outputs discrete scores (a tree, a binned or rounded model). Equal-mass bins split "
            "tied scores arbitrarily: use the 'discrete' binning or tie_policy='keep'.",
            columns=cols,
            count=int(counts[top].sum()),
        )
    ]


def _saturation_findings(
    probs: np.ndarray,
    labels: np.ndarray,
    scores: np.ndarray,
    binary: bool,
    cols: tuple[str, ...],
) -> list[LintFinding]:
    if binary:
        edge = (scores == 0.0) | (scores == 1.0)
        what = "a P(y=1) of exactly 0 or 1"
    else:
        edge = scores == 1.0
        what = "a top-label confidence of exactly 1"
    wrong = probs[np.arange(labels.size), labels] == 0.0
    if not edge.any() and not wrong.any():
        return []
    rows, count = first_rows(edge | wrong)
    tail = ""
    if wrong.any():
        tail = (
            f" {int(wrong.sum())} rows give the true class a probability of exactly 0, so the "
            "log loss is infinite without clipping (Calibscope clips at 1e-15)."
        )
    return [
        LintFinding(
            "exact-zero-one",
            "info",
            f"{int(edge.sum())} rows have {what} (saturated or rounded scores, e.g. float32 "
            "softmax). "
            "Libraries disagree on the bin of a score of exactly 1.0 (some add an extra bin); "
            "Calibscope puts it in the last bin." + tail,
            rows=rows,
            columns=cols,
            count=count,
        )
    ]
