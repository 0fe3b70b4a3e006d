"""Load predictions and labels from files, DataFrames or arrays, with a lint report.

Accepted layouts (see :func:`load_predictions`):

- **binary**: one P(y=1) column and a label column (0/1, booleans, or two values
  with a ``positive_class``);
- **multiclass**: K probability columns and a label column holding ``0..K-1``,
  ``1..K`` (converted, with a notice) or class names matching the column names;
- **headerless matrix + labels file**: a CSV of probabilities without a header
  row and a separate file with one label per row;
- **logits** instead of probabilities in any of these, converted by softmax
  (sigmoid for one column) with a notice.

Optional ``model``, ``split`` and ``group`` columns (names matched
case-insensitively) are kept as object arrays. Files are parsed as CSV or Parquet
(pyarrow); nothing is ever unpickled. Problems that make the data unusable raise
:class:`core.base.errors.DataError` with what is wrong and how to fix it; everything
else goes into the :class:`core.data.lint.LintReport` of the result.

One module per phase of a load:

- :mod:`core.data.tables`: reading CSV / Parquet sources into a table;
- :mod:`core.data.columns`: the label, probability and role columns;
- :mod:`core.data.probabilities`: the probability matrix (logits, renormalisation);
- :mod:`core.data.labels`: label values to class indices, and the class names;
- :mod:`core.data.lint`: the findings that do not stop a load;
- :mod:`core.data.predictions`: the :class:`Predictions` object and its digest;
- :mod:`core.data.loader`: :func:`load_predictions`, which runs the phases in turn;
- :mod:`core.data.models`: :func:`load_models`, one model per file with shared labels.
"""

from core.base.lazy import lazy_exports
from core.data.lint import LintFinding, LintReport
from core.data.predictions import Predictions, as_predictions, combine_models

# the phases that read files and tables need pandas: imported on first use, so arrays
# become Predictions without it
_LAZY = {
    "ColumnError": "core.data.columns",
    "load_predictions": "core.data.loader",
    "load_models": "core.data.models",
    "read_table": "core.data.tables",
}

__all__ = [
    "ColumnError",
    "LintFinding",
    "LintReport",
    "Predictions",
    "as_predictions",
    "combine_models",
    "load_models",
    "load_predictions",
    "read_table",
]

__getattr__ = lazy_exports("core.data", _LAZY, globals())
