"""Tables written for spreadsheets: CSV whose text cells cannot run as formulas.

A spreadsheet opening a CSV evaluates a cell that starts with ``=``, ``+``, ``-`` or ``@``
(and, in some programs, a tab or carriage return) as a formula, so a model named
``=HYPERLINK("https://…", "click")`` would become a link, and worse, in the downloaded
table. :func:`safe_csv` writes such text cells with a leading single quote, as OWASP
recommends for CSV injection; numbers, including negative ones, are written as numbers, floats to 15 significant digits.
Every CSV download and file of calibscope goes through it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from core.base.numbers import tidy_floats

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["FORMULA_PREFIXES", "neutralize", "safe_csv"]

#: First characters that make a spreadsheet read a text cell as a formula.
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def neutralize(value: Any) -> Any:
    """Return a text cell that cannot start a formula; any other value unchanged.

    Parameters
    ----------
    value : object
        One cell.

    Returns
    -------
    object
        ``"'" + value`` for a string starting with one of :data:`FORMULA_PREFIXES`,
        else ``value`` itself.

    Examples
    --------
    >>> neutralize("=1+1"), neutralize("model a"), neutralize(-0.5)
    ("'=1+1", 'model a', -0.5)
    """
    if isinstance(value, str) and value.startswith(FORMULA_PREFIXES):
        return "'" + value
    return value


def safe_csv(frame: pd.DataFrame, *, index: bool = False) -> str:
    """Return a DataFrame as CSV text whose text cells and headers cannot run as formulas.

    Parameters
    ----------
    frame : pandas.DataFrame
        The table. Numeric columns stay numbers (a negative number stays a number), floats
        at full precision without binary noise (15 significant digits,
        :func:`core.base.numbers.tidy_floats`: ``0.1 + 0.2`` is written ``0.3``); text in object, string and categorical columns, and the column names,
        go through :func:`neutralize`.
    index : bool, default=False
        Whether to write the index (its labels are neutralized too).

    Returns
    -------
    str
        The CSV text, lines ended by CRLF as in RFC 4180 (so a cell holding a line break,
        a bare carriage return included, is quoted and cannot start a row of its own).

    Examples
    --------
    >>> import pandas as pd
    >>> frame = pd.DataFrame({"model": ["=SUM(A1:A9)", "b"], "gap": [-0.25, 0.5]})
    >>> safe_csv(frame).splitlines()
    ['model,gap', "'=SUM(A1:A9),-0.25", 'b,0.5']
    """
    import pandas as pd

    out = tidy_floats(frame)
    for i in range(out.shape[1]):
        values = out.iloc[:, i]
        if isinstance(values.dtype, pd.CategoricalDtype) or not (
            pd.api.types.is_numeric_dtype(values.dtype)
            or pd.api.types.is_datetime64_any_dtype(values.dtype)
        ):
            # object, string and categorical columns may hold text; mapping leaves the
            # numbers and missing values of a mixed column as they are
            out.isetitem(i, values.astype(object).map(neutralize))
    out.columns = _labels(out.columns)
    if index:
        out.index = _labels(out.index)
    return out.to_csv(index=index, lineterminator="\r\n")


def _labels(labels: pd.Index) -> pd.Index:
    """Neutralize the text labels of an index (a MultiIndex level by level)."""
    import pandas as pd

    if isinstance(labels, pd.MultiIndex):
        return labels.set_levels([_labels(level) for level in labels.levels])
    return pd.Index([neutralize(v) for v in labels], name=neutralize(labels.name))
