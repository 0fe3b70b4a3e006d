"""Probabilities: the numeric matrix of the chosen columns, logits and renormalisation.

:func:`_to_probabilities` turns the raw ``(n, K)`` scores into valid probability
rows: logits are converted by softmax (sigmoid for one column), rows off by more
than :data:`core._validation.ROW_SUM_TOL` are renormalised on request or refused,
and values outside [0, 1] by less than :data:`CLIP_TOL` are clipped. Every
conversion leaves a lint finding.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import pandas as pd

from core._numeric import sigmoid, softmax
from core._validation import ROW_SUM_TOL
from core.data.lint import LintFinding, first_rows, format_rows
from core.errors import DataError

#: Values this far outside [0, 1] are rounding noise and are clipped.
CLIP_TOL = 1e-6


def _numeric_matrix(frame: pd.DataFrame, names: Sequence[str], strict: bool = True) -> np.ndarray:
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
                rows, count = first_rows(bad)
                example = text.to_numpy()[rows[0]]
                hint = ""
                if re.fullmatch(r"-?\d+,\d+", example):
                    hint = " It looks like a decimal comma: save the file with decimal points."
                raise DataError(
                    f"Probability column {c!r} holds non-numeric values such as {example!r} "
                    f"({format_rows(rows, count)}). Fix these cells or choose other columns "
                    f"with prob_columns=.{hint}"
                )
            s = parsed
        cols.append(s.to_numpy(dtype=np.float64, na_value=np.nan))
    return np.column_stack(cols) if cols else np.empty((frame.shape[0], 0))


def _to_probabilities(
    P: np.ndarray, names: Sequence[str], logits: bool | str, renormalize: bool
) -> tuple[np.ndarray, list[LintFinding]]:
    findings: list[LintFinding] = []
    cols = tuple(names)
    k = P.shape[1]
    negative = bool((P < -CLIP_TOL).any())
    sums = P.sum(axis=1)
    sums_ok = k == 1 or bool(np.abs(sums - 1.0).max() <= ROW_SUM_TOL)
    # logits take both signs; non-negative scores above 1 are rather percentages or counts
    if (
        logits is True
        or (logits == "auto" and negative and not sums_ok)
        or (logits == "auto" and negative and k == 1)
    ):
        log_probs = k > 1 and P.max() <= 0 and np.abs(_logsumexp(P)).max() <= ROW_SUM_TOL
        P = sigmoid(P) if k == 1 else softmax(P)
        how = "sigmoid" if k == 1 else "softmax"
        if logits is True:
            why = "logits=True"
        else:
            why = "negative values" + ("" if k == 1 else " and rows not summing to 1")
        kind = "log-probabilities" if log_probs else "logits"
        findings.append(
            LintFinding(
                "logits-converted",
                "warning",
                f"The scores were read as {kind} ({why}) and converted to probabilities with a "
                f"{how}. If they are already probabilities, load with logits=False to see "
                "what is wrong with them.",
                columns=cols,
                count=int(P.shape[0]),
            )
        )
        return P, findings
    if k > 1 and renormalize and not negative:
        P, note = _renormalize(P, sums, cols)
        findings += note
        sums = P.sum(axis=1)
    far = (P < -CLIP_TOL) | (P > 1.0 + CLIP_TOL)
    if far.any():
        rows, count = first_rows(far.any(axis=1))
        if k > 1 and sums_ok:
            hint = "Their rows sum to 1, so they are not logits either: fix the values."
        elif negative:
            hint = "If these are logits, load with logits=True; otherwise fix the values."
        elif k > 1:
            hint = (
                "If these are percentages or unnormalised scores, load with renormalize=True; "
                "if they are logits, with logits=True."
            )
        else:
            hint = "If these are percentages, divide them by 100; if logits, load with logits=True."
        raise DataError(
            f"{count} rows have probabilities outside [0, 1] (values from {np.min(P):.4g} "
            f"to {np.max(P):.4g}; {format_rows(rows, count)}). {hint}"
        )
    outside = (P < 0.0) | (P > 1.0)
    if outside.any():
        rows, count = first_rows(outside.any(axis=1))
        P = np.clip(P, 0.0, 1.0)
        findings.append(
            LintFinding(
                "clipped",
                "info",
                f"{count} rows had probabilities outside [0, 1] by less than {CLIP_TOL:g} "
                "(rounding); they were clipped to [0, 1].",
                rows=rows,
                columns=cols,
                count=count,
            )
        )
        sums = P.sum(axis=1)
    if k > 1:
        dev = np.abs(sums - 1.0)
        off = dev > ROW_SUM_TOL
        if off.any():
            if renormalize:
                P, note = _renormalize(P, sums, cols)
                return P, findings + note
            rows, count = first_rows(off)
            raise DataError(
                f"{count} of {P.shape[0]} rows of probabilities do not sum to 1 (largest "
                f"deviation {float(dev.max()):.3g}; {format_rows(rows, count)}). Load with "
                "renormalize=True to divide each row by its sum, or check that all K class "
                "columns were selected (prob_columns=) and that they are not logits "
                "(logits=True)."
            )
    return P, findings


def _renormalize(
    P: np.ndarray, sums: np.ndarray, cols: tuple[str, ...]
) -> tuple[np.ndarray, list[LintFinding]]:
    dev = np.abs(sums - 1.0)
    off = dev > ROW_SUM_TOL
    if not off.any():
        return P, []
    if (sums <= 0).any():
        rows, count = first_rows(sums <= 0)
        raise DataError(
            f"{count} rows of probabilities are all zero ({format_rows(rows, count)}) and cannot "
            "be renormalised; fix or drop them."
        )
    rows, count = first_rows(off)
    note = LintFinding(
        "renormalized",
        "warning",
        f"{count} rows did not sum to 1 (largest deviation {float(dev.max()):.3g}) and were "
        "divided by their sum (renormalize=True).",
        rows=rows,
        columns=cols,
        count=count,
    )
    return P / sums[:, None], [note]


def _logsumexp(a: np.ndarray) -> np.ndarray:
    m = a.max(axis=1, keepdims=True)
    return (m + np.log(np.exp(a - m).sum(axis=1, keepdims=True)))[:, 0]
