"""A dataset of part files gathered in memory: the stream's reading, memory's analyses.

:func:`load_parts` reads a folder, a glob or a list of part files (or a SQL query) exactly as the
stream engine reads them — the same parts, in the same order, with the same checks and one-line
messages naming the file and the row — and holds the rows as one :class:`core.data.Predictions`,
within the in-memory loader's row and byte limits. Its digest, lint and numbers are the stream's;
every in-memory analysis then applies (subgroups, the canonical lens, the exact bootstrap, the
dashboard's pages), which a stream refuses. ``calibscope <command> FOLDER`` (the memory engine)
reads a dataset through it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from core.data.limits import LoadLimits
from core.data.lint import LintReport, lint_values
from core.data.predictions import Predictions, make_predictions
from core.stream.engine import StreamRunner
from core.stream.load import LoadOptions, Rows
from core.stream.sources import BATCH_ROWS

__all__ = ["load_parts"]


def load_parts(
    source: Any,
    load: LoadOptions | None = None,
    *,
    batch_rows: int = BATCH_ROWS,
    limits: LoadLimits | None = None,
) -> Predictions:
    """Load a dataset of part files into memory, read as the stream engine reads it.

    Parameters
    ----------
    source : str, path, sequence of them, or Query
        A folder, a glob, a list of files or a SQL query
        (:func:`core.stream.sources.resolve_parts`).
    load : LoadOptions, optional
        How to read the columns (those of :func:`core.load_predictions`).
    batch_rows : int
        Rows read at a time.
    limits : LoadLimits, optional
        The in-memory loader's limits (default :meth:`LoadLimits.from_env`): at most
        ``max_rows`` rows (counted from the Parquet footers before a row is read) and
        ``max_bytes`` of probabilities and labels.

    Returns
    -------
    Predictions
        The rows of every part, in stream order, named after the source as the stream
        names it.

    Raises
    ------
    DataError
        The stream's errors (naming the file and the row), or a dataset over the limits.
    """
    limits = LoadLimits.from_env() if limits is None else limits
    with StreamRunner(source, load or LoadOptions(), batch_rows=batch_rows, limits=limits) as run:
        if run.total is not None:
            limits.check_rows(run.total, run.source)
        chunks: list[Rows] = []
        held = [0]

        def collect(rows: Rows, offsets: Any) -> tuple[dict, dict, dict]:
            if rows.offset == 0:  # a pass that starts again (a revised plan) reads afresh
                chunks.clear()
                held[0] = 0
            chunks.append(rows)
            held[0] += rows.labels.shape[0]
            if held[0] > limits.max_rows:  # CSV parts count their rows as they are read
                limits.check_rows(held[0], run.source, more=True)
            return {}, {}, {}

        plan, facts, _ = run.run(run.plan(), collect, "reading the rows into memory")
        probs = np.concatenate([c.probs for c in chunks])
        labels = np.concatenate([c.labels for c in chunks])
        limits.check_bytes(probs.nbytes + labels.nbytes, run.source)
        roles = {role: np.concatenate([c.roles[role] for c in chunks]) for role in plan.roles}
        extra = {col: np.concatenate([c.extra[col] for c in chunks]) for col in plan.kept}
        names = plan.class_names
        findings = plan.findings(facts) + lint_values(
            probs, labels, binary=plan.binary, class_names=names, prob_columns=plan.prob_columns
        )
        return make_predictions(
            probs,
            labels,
            names,
            plan.binary,
            roles,
            LintReport(tuple(findings)),
            run.source,
            plan.mapping(),
            extra,
        )
