"""Probabilities: the numeric matrix of the chosen columns, logits and renormalisation.

:func:`to_probabilities` turns the raw ``(n, K)`` scores into valid probability
rows: logits are converted by softmax (sigmoid for one column), rows off by more
than :data:`core.base.validation.ROW_SUM_TOL` are renormalised on request or refused,
and values outside [0, 1] by less than :data:`CLIP_TOL` are clipped. Every
conversion leaves a lint finding.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from core.base.errors import DataError, arg
from core.base.numeric import sigmoid, softmax
from core.base.validation import ROW_SUM_TOL
from core.data.lint import LintFinding, first_rows, format_rows

#: Values this far outside [0, 1] are rounding noise and are clipped.
CLIP_TOL = 1e-6


def numeric_matrix(
    frame: pd.DataFrame, names: Sequence[str], strict: bool = True, offset: int = 0
) -> np.ndarray:
    """Return the named columns as a float64 matrix, reading text of numbers as numbers."""
    if all(frame[c].dtype.kind in "iuf" for c in names):
        return frame[list(names)].to_numpy(dtype=np.float64)
    cols = []
    for c in names:
        s = frame[c]
        if s.dtype.kind == "b":
            s = s.astype(np.float64)
        elif s.dtype.kind not in "iuf":
            text = s.astype(str).str.strip()
            parsed = pd.to_numeric(text, errors="coerce")
            bad = parsed.isna().to_numpy() & s.notna().to_numpy()
            if bad.any() and strict:
                rows, count = first_rows(bad, offset)
                example = text.to_numpy()[rows[0] - offset]
                hint = ""
                if re.fullmatch(r"-?\d+,\d+", example):
                    hint = " It looks like a decimal comma: save the file with decimal points."
                raise DataError(
                    f"Probability column {c!r} holds non-numeric values such as {example!r} "
                    f"({format_rows(rows, count)}). Fix these cells or choose other columns "
                    f"with {arg('prob_columns')}.{hint}",
                    rows=rows,
                )
            s = parsed
        cols.append(s.to_numpy(dtype=np.float64, na_value=np.nan))
    return np.column_stack(cols) if cols else np.empty((frame.shape[0], 0))


@dataclass(frozen=True)
class ScoreFacts:
    """What decides how raw scores become probabilities, mergeable over chunks of rows.

    Attributes
    ----------
    negative : bool
        Some value is below ``-CLIP_TOL``.
    row_error : float
        Largest ``|Σ_k P_ik − 1|`` over the rows (several columns only; NaN-free rows).
    log_probs : bool
        Every row is ``≤ 0`` with a ``logsumexp`` within ``ROW_SUM_TOL`` of 0
        (log-probabilities rather than logits; several columns only).
    """

    negative: bool = False
    row_error: float = 0.0
    log_probs: bool = True

    @classmethod
    def of(cls, P: np.ndarray) -> ScoreFacts:
        """Return the facts of one chunk of rows of raw scores ``(n, K)``."""
        k = P.shape[1]
        if P.shape[0] == 0:
            return cls()
        negative = bool(P.min() < -CLIP_TOL)
        if k == 1:
            return cls(negative, 0.0, False)
        row_error = float(np.abs(P.sum(axis=1) - 1.0).max())
        log_probs = bool(P.max() <= 0 and np.abs(_logsumexp(P)).max() <= ROW_SUM_TOL)
        return cls(negative, row_error, log_probs)

    def __add__(self, other: ScoreFacts) -> ScoreFacts:
        """Merge the facts of two disjoint chunks."""
        return ScoreFacts(
            self.negative or other.negative,
            max(self.row_error, other.row_error),
            self.log_probs and other.log_probs,
        )

    def reads_logits(self, k: int, logits: bool | str) -> bool:
        """Whether scores with these facts are converted as logits (``logits`` as loaded)."""
        sums_ok = k == 1 or self.row_error <= ROW_SUM_TOL
        # logits take both signs; non-negative scores above 1 are rather percentages or counts
        return logits is True or (logits == "auto" and self.negative and (k == 1 or not sums_ok))


def logits_finding(
    facts: ScoreFacts, names: Sequence[str], logits: bool | str, n: int
) -> LintFinding:
    """Return the finding that the scores were converted as logits."""
    k = len(names)
    how = "sigmoid" if k == 1 else "softmax"
    if logits is True:
        why = "logits=True"
    else:
        why = "negative values" + ("" if k == 1 else " and rows not summing to 1")
    kind = "log-probabilities" if k > 1 and facts.log_probs else "logits"
    return LintFinding(
        "logits-converted",
        "warning",
        f"The scores were read as {kind} ({why}) and converted to probabilities with a "
        f"{how}. If they are already probabilities, {arg('as_probabilities')}.",
        columns=tuple(names),
        count=int(n),
    )


def clipped_finding(rows: Sequence[int], count: int, names: Sequence[str]) -> LintFinding:
    """Return the finding that rows within rounding of [0, 1] were clipped."""
    return LintFinding(
        "clipped",
        "info",
        f"{count} rows had probabilities outside [0, 1] by less than {CLIP_TOL:g} "
        "(rounding); they were clipped to [0, 1].",
        rows=tuple(rows),
        columns=tuple(names),
        count=count,
    )


def renormalized_finding(
    rows: Sequence[int], count: int, deviation: float, names: Sequence[str]
) -> LintFinding:
    """Return the finding that rows not summing to 1 were divided by their sum."""
    return LintFinding(
        "renormalized",
        "warning",
        f"{count} rows did not sum to 1 (largest deviation {deviation:.3g}) and were "
        f"divided by their sum ({arg('renormalize')}).",
        rows=tuple(rows),
        columns=tuple(names),
        count=count,
    )


def to_probabilities(
    P: np.ndarray,
    names: Sequence[str],
    logits: bool | str,
    renormalize: bool,
    *,
    facts: ScoreFacts | None = None,
    offset: int = 0,
) -> tuple[np.ndarray, list[LintFinding]]:
    """Turn raw scores into probability rows, row by row once ``facts`` decide the reading.

    ``facts`` are those of all rows (default: of ``P``); a chunk of a larger table passes the
    table's, and ``offset``, the position of its first row, so that findings and errors name
    rows of the whole table. The ``logits-converted`` finding is left to the caller when
    ``facts`` are given (it counts every row of the table).
    """
    findings: list[LintFinding] = []
    cols = tuple(names)
    k = P.shape[1]
    whole = facts is None
    facts = ScoreFacts.of(P) if facts is None else facts
    if facts.reads_logits(k, logits):
        P = sigmoid(P) if k == 1 else softmax(P)
        if whole:
            findings.append(logits_finding(facts, names, logits, P.shape[0]))
        return P, findings
    negative = facts.negative
    sums_ok = k == 1 or facts.row_error <= ROW_SUM_TOL
    sums = P.sum(axis=1) if k > 1 else None
    if k > 1 and renormalize and not negative:
        P, note = _renormalize(P, sums, cols, offset)
        findings += note
        sums = P.sum(axis=1)
    # the range first: the row masks below are built only when some value is outside [0, 1]
    inside = P.size == 0 or (float(P.min()) >= 0.0 and float(P.max()) <= 1.0)
    far = None if inside else (P < -CLIP_TOL) | (P > 1.0 + CLIP_TOL)
    if far is not None and far.any():
        rows, count = first_rows(far.any(axis=1), offset)
        if k > 1 and sums_ok:
            hint = "Their rows sum to 1, so they are not logits either: fix the values."
        elif negative:
            hint = f"If these are logits, load with {arg('logits')}; otherwise fix the values."
        elif k > 1:
            hint = (
                f"If these are percentages or unnormalised scores, load with {arg('renormalize')}; "
                f"if they are logits, with {arg('logits')}."
            )
        else:
            hint = (
                "If these are percentages, divide them by 100; if logits, load with "
                f"{arg('logits')}."
            )
        raise DataError(
            f"{count} rows have probabilities outside [0, 1] (values from {np.min(P):.4g} "
            f"to {np.max(P):.4g}; {format_rows(rows, count)}). {hint}",
            rows=rows,
        )
    outside = None if inside else (P < 0.0) | (P > 1.0)
    if outside is not None and outside.any():
        rows, count = first_rows(outside.any(axis=1), offset)
        P = np.clip(P, 0.0, 1.0)
        findings.append(clipped_finding(rows, count, cols))
        sums = P.sum(axis=1)
    if k > 1:
        dev = np.abs(sums - 1.0)
        off = dev > ROW_SUM_TOL
        if off.any():
            if renormalize:
                P, note = _renormalize(P, sums, cols, offset)
                return P, findings + note
            rows, count = first_rows(off, offset)
            raise DataError(
                f"{count} of {P.shape[0]} rows of probabilities do not sum to 1 (largest "
                f"deviation {float(dev.max()):.3g}; {format_rows(rows, count)}). Load with "
                f"{arg('renormalize')} to divide each row by its sum, or check that all K "
                f"class columns were selected ({arg('prob_columns')}) and that they are not "
                f"logits ({arg('logits')}).",
                rows=rows,
            )
    return P, findings


def _renormalize(
    P: np.ndarray, sums: np.ndarray, cols: tuple[str, ...], offset: int = 0
) -> tuple[np.ndarray, list[LintFinding]]:
    dev = np.abs(sums - 1.0)
    off = dev > ROW_SUM_TOL
    if not off.any():
        return P, []
    if (sums <= 0).any():
        rows, count = first_rows(sums <= 0, offset)
        raise DataError(
            f"{count} rows of probabilities are all zero ({format_rows(rows, count)}) and cannot "
            "be renormalised; fix or drop them.",
            rows=rows,
        )
    rows, count = first_rows(off, offset)
    return P / sums[:, None], [renormalized_finding(rows, count, float(dev.max()), cols)]


def _logsumexp(a: np.ndarray) -> np.ndarray:
    m = a.max(axis=1, keepdims=True)
    return (m + np.log(np.exp(a - m).sum(axis=1, keepdims=True)))[:, 0]
