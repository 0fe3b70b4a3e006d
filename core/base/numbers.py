"""Numbers written for people, and tables written at full precision without binary noise.

One module formats every number that reaches a person: the dashboard's tables and sentences,
the report's HTML and the CLI's text. The rules (``docs/formulas.md``, "Numbers for people"):

- a number has ``digits`` significant digits (default 4), written plainly for
  ``1e-4 ≤ |x| < 1e6`` (``0.04123``, ``123.5``) and as ``4.034e-6`` outside, never with a
  cut-off leading zero (``.000004034``) nor trailing zeros;
- floating noise is zero: ``|x| ≤ zero_below`` (default ``1e-12``) prints ``0``, and a value
  that rounds to zero never prints a sign (``-0.00000`` → ``0``);
- a p-value below ``1e-16`` prints ``< 1e-16``; below ``1e-3`` two significant digits in
  scientific form (``2.1e-22`` is not printed: that is below the floor), else two
  significant digits (``0.84``, ``0.041``);
- a missing value (None, NaN) prints an empty string;
- a CSV keeps full precision but rounds each float to 15 significant digits
  (:func:`tidy_floats`), so ``0.1 + 0.2`` is written ``0.3``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "CSV_DIGITS",
    "PVALUE_FLOOR",
    "ZERO_BELOW",
    "COLUMN_LABELS",
    "format_duration",
    "format_frame",
    "format_interval",
    "format_number",
    "format_percent",
    "format_pvalue",
    "is_missing",
    "is_pvalue_column",
    "people_table",
    "tidy_floats",
    "time_left",
]

#: Magnitudes at or below this print as 0 (floating noise of sums of numbers of order 1).
ZERO_BELOW = 1e-12
#: p-values below this print as ``< 1e-16``: beyond double precision's resolution near 1.
PVALUE_FLOOR = 1e-16
#: Significant digits of every float in a CSV.
CSV_DIGITS = 15


def is_missing(x: Any) -> bool:
    """Whether a cell is missing: None, NaN, ``pandas.NA`` or ``NaT``.

    Examples
    --------
    >>> is_missing(None), is_missing(float("nan")), is_missing(0.0)
    (True, True, False)
    """
    if x is None:
        return True
    try:
        return bool(x != x)  # NaN, NaT
    except (TypeError, ValueError):  # pandas.NA raises on bool()
        return True


def _scientific(v: float, digits: int) -> str:
    mantissa, exponent = f"{v:.{digits - 1}e}".split("e")
    if "." in mantissa:
        mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa}e{int(exponent)}"


def format_number(
    x: Any, digits: int = 4, *, signed: bool = False, zero_below: float = ZERO_BELOW
) -> str:
    """Write a number with ``digits`` significant digits for people.

    Parameters
    ----------
    x : number, None or str
        The value. Integers (and booleans) are written whole, with thousands separators;
        None and NaN give ``""``; a string is returned as it is.
    digits : int, default=4
        Significant digits of a float.
    signed : bool, default=False
        Write ``+`` before a positive value (for differences and gaps).
    zero_below : float, default=ZERO_BELOW
        Magnitudes at or below it are floating noise and print as ``0``.

    Returns
    -------
    str
        Plain decimals for ``1e-4 ≤ |x| < 1e6``, else ``m.mmme±k`` (trailing zeros dropped).

    Examples
    --------
    >>> format_number(0.000004034), format_number(0.041234), format_number(-1.001e-15)
    ('4.034e-6', '0.04123', '0')
    >>> format_number(1234567.0), format_number(12000), format_number(-0.5, signed=True)
    ('1.235e6', '12,000', '-0.5')
    >>> format_number(None), format_number(float("nan")), format_number(0.25, signed=True)
    ('', '', '+0.25')
    """
    if isinstance(x, str):
        return x
    if is_missing(x):
        return ""
    if isinstance(x, (bool, np.bool_)):
        return str(bool(x))
    if isinstance(x, (int, np.integer)):
        return f"{int(x):+,}" if signed and x else f"{int(x):,}"
    v = float(x)
    if math.isinf(v):
        return "∞" if v > 0 else "−∞"
    if abs(v) <= zero_below:
        return "0"
    sign = "+" if signed and v > 0 else ""
    a = abs(v)
    if a >= 1e6 or a < 1e-4:
        text = _scientific(v, digits)
    else:
        exponent = math.floor(math.log10(a))
        if round(a, max(digits - 1 - exponent, 0)) >= 10 ** (exponent + 1):
            exponent += 1  # 9.99996 rounds to 10.00
        if exponent >= 6:
            return sign + _scientific(v, digits)
        text = f"{v:.{max(digits - 1 - exponent, 0)}f}"
        if "." in text:
            text = text.rstrip("0").rstrip(".")
        if float(text) == 0:  # rounds away entirely
            return "0"
    return sign + text


def format_pvalue(p: Any) -> str:
    """Write a p-value: ``< 1e-16`` below the floor, else two significant digits.

    Examples
    --------
    >>> format_pvalue(2e-22), format_pvalue(0.0), format_pvalue(3.4e-7)
    ('< 1e-16', '< 1e-16', '3.4e-7')
    >>> format_pvalue(0.8412), format_pvalue(0.04123), format_pvalue(1.0), format_pvalue(None)
    ('0.84', '0.041', '1', '')
    """
    if isinstance(p, str):
        return p
    if is_missing(p):
        return ""
    v = float(p)
    if v < PVALUE_FLOOR:
        return "< 1e-16"
    return format_number(v, 2, zero_below=0.0)


def format_interval(low: Any, high: Any, digits: int = 4) -> str:
    """Write an interval ``[low, high]``; empty when either end is missing.

    Examples
    --------
    >>> format_interval(0.0371, 0.04612), format_interval(None, 0.1)
    ('[0.0371, 0.04612]', '')
    """
    if is_missing(low) or is_missing(high):
        return ""
    return f"[{format_number(low, digits)}, {format_number(high, digits)}]"


def format_duration(seconds: float) -> str:
    """Return a rough duration in words, as a page says how long something takes.

    Examples
    --------
    >>> format_duration(0.2), format_duration(67.4), format_duration(250), format_duration(33_000)
    ('1 s', '67 s', '4 min', '9.2 h')
    """
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    if seconds < 5400:
        return f"{round(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"


def time_left(spent: float, fraction: float) -> float | None:
    """Return the seconds a task still needs if it goes on as fast as so far.

    ``spent · (1 − f) / f`` after ``spent`` seconds for a share ``f`` of the work; None before
    the first second (too early to tell) or outside ``0 < f < 1``.

    Examples
    --------
    >>> time_left(10.0, 0.25), time_left(0.5, 0.5), time_left(3.0, 1.0)
    (30.0, None, None)
    """
    if not 0.0 < fraction < 1.0 or spent <= 1.0:
        return None
    return spent * (1.0 - fraction) / fraction


def format_percent(x: Any, digits: int = 2) -> str:
    """Write a share as a percentage with ``digits`` significant digits.

    Examples
    --------
    >>> format_percent(0.04123), format_percent(0.5), format_percent(None)
    ('4.1 %', '50 %', '')
    """
    if is_missing(x):
        return ""
    return f"{format_number(100 * float(x), digits, zero_below=100 * ZERO_BELOW)} %"


def tidy_floats(values: Any, digits: int = CSV_DIGITS) -> Any:
    """Round floats to ``digits`` significant digits, removing binary noise.

    Parameters
    ----------
    values : float, numpy array or pandas DataFrame
        Numbers; in a DataFrame only its float columns change.
    digits : int, default=CSV_DIGITS
        Significant digits kept (15 is what a double always holds exactly).

    Returns
    -------
    Same type as ``values``.

    Examples
    --------
    >>> float(tidy_floats(0.1 + 0.2)), float(tidy_floats(1 / 3))
    (0.3, 0.333333333333333)
    """
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas is a dependency
        pd = None
    if pd is not None and isinstance(values, pd.DataFrame):
        out = values.copy(deep=False)
        for i in range(out.shape[1]):
            col = out.iloc[:, i]
            if pd.api.types.is_float_dtype(col.dtype):
                out.isetitem(i, pd.Series(tidy_floats(col.to_numpy()), index=out.index))
        return out
    a = np.asarray(values, dtype=float)
    finite = np.isfinite(a)
    # through the decimal text: exact, where a multiply-divide by 10^k leaves an ulp of noise
    flat = [
        float(f"{v:.{digits}g}") if f else v for v, f in zip(a.ravel(), finite.ravel(), strict=True)
    ]
    out = np.asarray(flat, dtype=float).reshape(a.shape)
    return out if out.ndim else out[()]


def is_pvalue_column(name: Any) -> bool:
    """Whether a table column holds p-values, by its name (``pvalue``, ``p-value``, ``... p``).

    Examples
    --------
    >>> is_pvalue_column("test p-value"), is_pvalue_column("pvalue"), is_pvalue_column("gap")
    (True, True, False)
    """
    text = str(name).lower()
    return text in {"p", "pvalue", "p_value"} or text.endswith(("p-value", "pvalue", "p_value"))


def format_frame(
    frame: pd.DataFrame,
    *,
    formats: Mapping[Any, Callable[[Any], str]] | None = None,
    signed: Iterable[Any] = (),
) -> dict[Any, Callable[[Any], str]]:
    """Return the formatter of each column of a table, for a Styler or an HTML table.

    Float columns get :func:`format_number` (signed for the columns in ``signed``), columns
    named as p-values :func:`format_pvalue`, integer columns thousands separators, and
    every column writes a missing cell as ``""``. ``formats`` overrides any column.

    Parameters
    ----------
    frame : pandas.DataFrame
        The table.
    formats : mapping, optional
        Column → formatter, taking precedence.
    signed : iterable, optional
        Columns of differences, written with ``+`` before positive values.

    Returns
    -------
    dict
        Column → function of one cell returning its text.
    """
    import pandas as pd

    signed = set(signed)
    out: dict[Any, Callable[[Any], str]] = {}
    for name in frame.columns:
        dtype = frame[name].dtype
        if formats and name in formats:
            out[name] = formats[name]
        elif is_pvalue_column(name):
            out[name] = format_pvalue
        elif pd.api.types.is_bool_dtype(dtype):
            out[name] = _plain
        elif pd.api.types.is_numeric_dtype(dtype) or pd.api.types.is_object_dtype(dtype):
            out[name] = _signed_number if name in signed else format_number
        else:
            out[name] = _plain
    return out


def _signed_number(x: Any) -> str:
    return format_number(x, signed=True)


def _plain(x: Any) -> str:
    return "" if is_missing(x) else str(x)


#: The header people read for each column name of core's tables (the app and the report).
COLUMN_LABELS = {
    "label": "metric",
    "lower": "lower edge",
    "upper": "upper edge",
    "mean_score": "mean score",
    "mean_label": "observed frequency",
    "gap": "gap (score − observed)",
    "low": "interval low",
    "high": "interval high",
    "band_low": "band low",
    "band_high": "band high",
    "outside_band": "outside band",
    "pvalue": "p-value",
    "n_bins": "bins",
}


def people_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Return a table with the columns people read: codes out, headers of the app.

    A table with a ``label`` column beside the registry codes of ``metric`` loses the
    codes (the label takes the header ``metric``); every header in
    :data:`COLUMN_LABELS` is renamed. The dashboard's column settings use the same words.

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame({"metric": ["plugin"], "label": ["Plug-in binned (ECE)"], "low": [0.1]})
    >>> list(people_table(t).columns)
    ['metric', 'interval low']
    """
    out = frame
    if "label" in out.columns and "metric" in out.columns:
        out = out.drop(columns="metric")
    return out.rename(columns=COLUMN_LABELS)
