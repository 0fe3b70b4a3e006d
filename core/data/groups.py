"""The groups of predictions: one helper for every scope that conditions on a column.

:func:`find_groups` turns one or several grouping columns — the ``group`` (or ``split``)
role column, or any column kept at load (:attr:`Predictions.extra`) — into one integer
code per row and one name per group. Several columns make their intersections the
groups (``"sex=F & age=old"``); only combinations that occur are groups. The CI gate
(:func:`core.analyses.gate.check_calibration`) and the subgroup analysis
(:func:`core.analyses.subgroups.subgroup_analysis`) both read groups here, and both judge a group
only from :data:`MIN_GROUP_ROWS` rows on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from core.base.errors import ConfigError
from core.base.options import GROUP_ROWS

__all__ = ["MIN_GROUP_ROWS", "MISSING", "MAX_GROUPS", "Groups", "find_groups", "group_columns"]

#: Groups with fewer rows are reported as too small to judge (an interval on a handful of
#: rows is so wide it says nothing about the group's calibration).
MIN_GROUP_ROWS: int = GROUP_ROWS.default  # type: ignore[assignment]
#: The name of a missing value of a grouping column.
MISSING = "(missing)"
#: The most groups one analysis forms (a column with more values is not a grouping column).
MAX_GROUPS = 1000
#: Role columns that can group rows, by role name.
_ROLE_COLUMNS = ("group", "split")


@dataclass(frozen=True, eq=False)
class Groups:
    """The groups of a set of predictions.

    Attributes
    ----------
    by : tuple of str
        The grouping columns.
    names : tuple of str
        One name per group, in sorted order of the columns' values: the value itself for one
        column, ``"col=value & col=value"`` for several.
    codes : numpy.ndarray
        ``(n,)`` int64: the group of every row (an index into ``names``).
    counts : numpy.ndarray
        ``(G,)`` int64 rows per group.
    """

    by: tuple[str, ...]
    names: tuple[str, ...]
    codes: np.ndarray
    counts: np.ndarray

    def __len__(self) -> int:
        return len(self.names)

    def mask(self, name: str) -> np.ndarray:
        """Return the boolean mask of the rows of group ``name``."""
        return self.codes == self.names.index(name)

    def parts(self, pred: Any) -> dict[str, Any]:
        """Return each group's rows of ``pred`` (:meth:`Predictions.subset`), in order."""
        return {name: pred.subset(self.codes == g) for g, name in enumerate(self.names)}


def group_columns(pred: Any) -> tuple[str, ...]:
    """Return the columns ``pred`` can be grouped by: role columns present, then kept columns.

    Parameters
    ----------
    pred : Predictions
        Loaded predictions.

    Returns
    -------
    tuple of str
        ``"group"`` and ``"split"`` when present, then the names of :attr:`Predictions.extra`.
    """
    roles = tuple(r for r in _ROLE_COLUMNS if getattr(pred, r, None) is not None)
    return roles + tuple(c for c in getattr(pred, "extra", {}) if c not in roles)


def column_values(pred: Any, name: str) -> np.ndarray:
    extra = getattr(pred, "extra", {})
    if name in extra:
        return extra[name]
    for role in _ROLE_COLUMNS:
        values = getattr(pred, role, None)
        if values is not None and name in (role, (pred.columns or {}).get(role)):
            return values
    have = group_columns(pred)
    raise ConfigError(
        f"No grouping column {name!r} in these predictions; "
        + (
            f"columns to group by: {', '.join(map(repr, have))}."
            if have
            else "they have no `group` column and no other column was kept."
        )
        + " Load the file with keep_columns=[...] (calibscope: --by COLUMN) to group by any "
        "of its columns."
    )


def _factorize(values: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Sorted codes and names of one column's values (missing values last, as MISSING)."""
    import pandas as pd

    missing = pd.isna(values) if values.dtype != object else (values == "")
    present = values[~missing]
    uniques, inverse = np.unique(present, return_inverse=True)
    codes = np.full(values.shape[0], uniques.shape[0], dtype=np.int64)
    codes[~missing] = inverse.ravel()
    if values.dtype.kind == "M":
        names = [str(pd.Timestamp(u)) for u in uniques]
    else:
        names = [str(u.item() if hasattr(u, "item") else u) for u in uniques]
    if missing.any():
        names.append(MISSING)
    return codes, names


def find_groups(pred: Any, by: Sequence[str] | str = ("group",)) -> Groups:
    """Return the groups of ``pred`` by one or several columns (their intersections).

    Parameters
    ----------
    pred : Predictions
        Loaded predictions.
    by : str or sequence of str, default=("group",)
        Grouping columns: ``"group"``/``"split"`` (the role columns, by role or source
        name) or columns kept at load (:attr:`Predictions.extra`).

    Returns
    -------
    Groups
        Codes, names and sizes of the groups that occur.

    Raises
    ------
    ConfigError
        For no column, an unknown or repeated column, or more than :data:`MAX_GROUPS` groups.

    Examples
    --------
    >>> import pandas as pd
    >>> from core.data import load_predictions
    >>> df = pd.DataFrame({"p": [.2, .7, .9], "y": [0, 1, 1], "group": ["b", "a", "b"]})
    >>> g = find_groups(load_predictions(df))
    >>> g.names, g.codes.tolist(), g.counts.tolist()
    (('a', 'b'), [1, 0, 1], [1, 2])
    """
    cols = (by,) if isinstance(by, str) else tuple(str(c) for c in by)
    if not cols:
        raise ConfigError("Choose at least one column to group the rows by.")
    if len(set(cols)) != len(cols):
        raise ConfigError("A grouping column is listed twice; list each column once.")
    code = np.zeros(pred.n, dtype=np.int64)
    per_column: list[list[str]] = []
    for name in cols:
        codes, names = _factorize(np.asarray(column_values(pred, name)))
        if len(names) > MAX_GROUPS:
            raise ConfigError(
                f"The column {name!r} has {len(names):,} distinct values, more than "
                f"{MAX_GROUPS:,}: it is not a grouping column (an identifier or a continuous "
                "value?). Group by a column with few values, or cut it into bands first."
            )
        code = code * len(names) + codes
        per_column.append(names)
    present, codes = np.unique(code, return_inverse=True)
    if present.shape[0] > MAX_GROUPS:
        raise ConfigError(
            f"The columns {', '.join(map(repr, cols))} form {present.shape[0]:,} groups, more "
            f"than {MAX_GROUPS:,}; group by fewer columns."
        )
    labels = []
    sizes = [len(n) for n in per_column]
    for c in present.tolist():
        parts = []
        for i in range(len(cols) - 1, -1, -1):
            c, v = divmod(c, sizes[i])
            parts.append(per_column[i][v])
        parts.reverse()
        if len(cols) == 1:
            labels.append(parts[0])
        else:
            labels.append(" & ".join(f"{col}={v}" for col, v in zip(cols, parts, strict=True)))
    codes = codes.ravel().astype(np.int64)
    counts = np.bincount(codes, minlength=present.shape[0]).astype(np.int64)
    return Groups(cols, tuple(labels), codes, counts)
