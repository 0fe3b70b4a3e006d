"""Split protocols: which rows fit a recalibrator and which rows judge it.

- ``fraction``: one seeded random split; ``calibration_fraction`` of the rows fit.
- ``column``: the data's ``split`` column (``calibration``/``cal``/``val``/... versus
  ``test``/``holdout``/...).
- ``repeated``: ``n_repeats`` independent seeded random splits (report mean ± sd).
- ``cross-fit``: ``n_folds`` seeded folds; each fold is judged by a recalibrator
  fitted on the other folds, so every row gets an out-of-fold prediction.
- ``in-sample``: fit and judge on all rows. Only on explicit request; every number
  it produces is labelled "in-sample".

With ``stratify`` (labels), random splits keep each class's share in both parts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from core.base.errors import ConfigError, DataError
from core.base.validation import check_rng

PROTOCOLS = ("fraction", "column", "repeated", "cross-fit", "in-sample")

CALIBRATION_NAMES = frozenset(
    {"calibration", "calib", "cal", "val", "valid", "validation", "fit", "train", "recalibration"}
)
TEST_NAMES = frozenset({"test", "holdout", "eval", "evaluation", "heldout", "held-out"})


@dataclass(frozen=True, eq=False)
class Split:
    """One calibration/test partition.

    Attributes
    ----------
    calibration : numpy.ndarray
        Row indices that fit the recalibrator.
    test : numpy.ndarray
        Row indices that judge it.
    name : str
        Label, e.g. ``"repeat 2"`` or ``"fold 3"``.
    in_sample : bool
        True when the test rows are the calibration rows.
    """

    calibration: np.ndarray
    test: np.ndarray
    name: str
    in_sample: bool = False


def _random_partition(
    n: int, fraction: float, rng: np.random.Generator, stratify: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    if stratify is None:
        perm = rng.permutation(n)
        k = int(round(fraction * n))
        return np.sort(perm[:k]), np.sort(perm[k:])
    cal, test = [], []
    for cls in np.unique(stratify):
        rows = rng.permutation(np.flatnonzero(stratify == cls))
        k = int(round(fraction * rows.size))
        cal.append(rows[:k])
        test.append(rows[k:])
    return np.sort(np.concatenate(cal)), np.sort(np.concatenate(test))


def column_split(split_labels: ArrayLike) -> Split:
    """Split by a column of calibration/test labels.

    Parameters
    ----------
    split_labels : array_like
        One value per row, e.g. ``"calibration"`` or ``"test"`` (case-insensitive).

    Returns
    -------
    Split
        The partition.

    Raises
    ------
    DataError
        If a value is neither a calibration nor a test name, or a side is empty.
    """
    values = np.asarray(split_labels, dtype=object)
    norm = np.array([str(v).strip().lower() for v in values], dtype=object)
    is_cal = np.isin(norm, list(CALIBRATION_NAMES))
    is_test = np.isin(norm, list(TEST_NAMES))
    unknown = sorted(set(norm[~(is_cal | is_test)]))
    if unknown:
        raise DataError(
            f"The split column has value(s) {', '.join(map(repr, unknown[:5]))} that are neither "
            f"calibration ({', '.join(sorted(CALIBRATION_NAMES))}) nor test "
            f"({', '.join(sorted(TEST_NAMES))})."
        )
    if not is_cal.any() or not is_test.any():
        raise DataError(
            "The split column needs both calibration and test rows; "
            f"found {int(is_cal.sum())} calibration and {int(is_test.sum())} test rows."
        )
    return Split(np.flatnonzero(is_cal), np.flatnonzero(is_test), "split column")


def make_splits(
    n: int,
    *,
    protocol: str = "fraction",
    calibration_fraction: float = 0.5,
    split_labels: ArrayLike | None = None,
    n_repeats: int = 5,
    n_folds: int = 5,
    stratify: ArrayLike | None = None,
    seed: int | np.random.Generator | None = None,
) -> tuple[Split, ...]:
    """Return the calibration/test partitions of a split protocol.

    Parameters
    ----------
    n : int
        Number of rows.
    protocol : {"fraction", "column", "repeated", "cross-fit", "in-sample"}
        See the module docstring.
    calibration_fraction : float, default 0.5
        Share of rows that fit (``fraction`` and ``repeated``).
    split_labels : array_like, optional
        The ``split`` column (``column`` protocol).
    n_repeats : int, default 5
        Number of random splits (``repeated``).
    n_folds : int, default 5
        Number of folds (``cross-fit``).
    stratify : array_like, optional
        Labels to stratify random splits and folds by.
    seed : int, Generator or None
        Randomness; None means seed 0.

    Returns
    -------
    tuple of Split
        One or more partitions.

    Examples
    --------
    >>> [s.test.size for s in make_splits(10, protocol="cross-fit", n_folds=3)]
    [4, 3, 3]
    """
    if protocol not in PROTOCOLS:
        raise ConfigError(
            f"Unknown split protocol {protocol!r}; choose one of {', '.join(PROTOCOLS)}."
        )
    n = int(n)
    if n < 2:
        raise DataError(f"At least two rows are needed to split; got {n}.")
    strat = None if stratify is None else np.asarray(stratify)
    if strat is not None and strat.shape != (n,):
        raise DataError(f"stratify must have one value per row ({n}); got shape {strat.shape}.")
    rng = check_rng(seed)
    if protocol == "in-sample":
        every = np.arange(n)
        return (Split(every, every, "in-sample", in_sample=True),)
    if protocol == "column":
        return (_column_protocol(n, split_labels),)
    if protocol in ("fraction", "repeated"):
        return _random_splits(n, protocol, calibration_fraction, n_repeats, rng, strat)
    return _cross_fit(n, n_folds, rng, strat)


def _column_protocol(n: int, split_labels: ArrayLike | None) -> Split:
    """Return the ``column`` protocol's partition: the data's own split column."""
    if split_labels is None:
        raise DataError(
            "The 'column' protocol needs the data's split column; this data has none. "
            "Choose a calibration fraction or repeated random splits."
        )
    sp = column_split(split_labels)
    if sp.calibration.size + sp.test.size != n:
        raise DataError(
            f"The split column has {sp.calibration.size + sp.test.size} values for {n} rows."
        )
    return sp


def _random_splits(
    n: int,
    protocol: str,
    calibration_fraction: float,
    n_repeats: int,
    rng: np.random.Generator,
    strat: np.ndarray | None,
) -> tuple[Split, ...]:
    """Return the ``fraction`` protocol's random partition, or the ``repeated`` ones."""
    if not 0 < calibration_fraction < 1:
        raise ConfigError(f"calibration_fraction must lie in (0, 1); got {calibration_fraction!r}.")
    reps = 1 if protocol == "fraction" else int(n_repeats)
    if reps < 1:
        raise ConfigError(f"n_repeats must be at least 1; got {n_repeats!r}.")
    out = []
    for r in range(reps):
        cal, test = _random_partition(n, calibration_fraction, rng, strat)
        if cal.size == 0 or test.size == 0:
            raise DataError(f"A {calibration_fraction:g} split of {n} rows leaves one side empty.")
        out.append(Split(cal, test, "random split" if reps == 1 else f"repeat {r + 1}"))
    return tuple(out)


def _cross_fit(
    n: int, n_folds: int, rng: np.random.Generator, strat: np.ndarray | None
) -> tuple[Split, ...]:
    """Return the ``cross-fit`` folds, stratified by ``strat`` when given."""
    k = int(n_folds)
    if not 2 <= k <= n:
        raise ConfigError(f"n_folds must lie in 2..{n}; got {n_folds!r}.")
    fold = np.empty(n, dtype=np.int64)
    if strat is None:
        fold[rng.permutation(n)] = np.arange(n) % k
    else:
        start = 0
        for cls in np.unique(strat):
            rows = rng.permutation(np.flatnonzero(strat == cls))
            fold[rows] = (np.arange(rows.size) + start) % k
            start += rows.size
    every = np.arange(n)
    return tuple(Split(every[fold != f], every[fold == f], f"fold {f + 1}") for f in range(k))
