"""Run one calibration test by name: :func:`calibration_test`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from core.analyses.calibration_tests.base import TESTS, CalibrationTestResult
from core.base.errors import ConfigError
from core.base.validation import check_probs_labels, check_rng
from core.stats.lenses import LENSES, data_lens


def calibration_test(
    probs: ArrayLike,
    labels: ArrayLike,
    *,
    test: str = "skce-ul-asymptotic",
    lens: str | None = None,
    seed: int | np.random.Generator | None = None,
    progress: Callable[[float, str], Any] | None = None,
    **options: Any,
) -> CalibrationTestResult:
    """Test the null hypothesis that the predictions are calibrated.

    Parameters
    ----------
    probs : array_like
        ``(n,)`` P(y=1) or ``(n, K)`` probabilities.
    labels : array_like
        Class indices ``0..K−1``.
    test : str
        A name in :data:`TESTS` (see the module docstring).
    lens : str, optional
        Kernel tests: ``"canonical"`` (default; the full vector, strong calibration),
        ``"binary"`` or ``"top-label"``. Other tests: ``"binary"`` for two classes,
        otherwise ``"top-label"`` by default; ``consistency`` also takes ``"classwise"``.
    seed : int, Generator or None
        Randomness of resampling tests (``None`` means seed 0).
    progress : callable, optional
        ``progress(fraction, message)`` as a long test goes on (tests whose
        :attr:`~core.analyses.calibration_tests.TestInfo.reports_progress`; the others
        ignore it).
    **options
        Test options. Kernel tests: ``kernel``, ``metric``, ``bandwidth`` (``"median"``),
        ``max_exact_n``; ``clip_negative`` (bounds, default True: a bound of 1 for a
        negative unbiased estimate); ``ddof`` (linear test, default 0 as in the paper);
        ``n_resamples`` (bootstrap, consistency; default 1000); ``block_size`` (block
        test). Consistency: ``estimator``, ``binning``, ``n_bins``, ``norm``,
        ``tie_policy``. Hosmer–Lemeshow: ``n_groups`` (10), ``fitted`` (False).

    Returns
    -------
    CalibrationTestResult
        Statistic, p-value (or bound), method and, for resampling tests, the null
        distribution.

    Raises
    ------
    ConfigError
        For unknown tests, lenses or options.
    EstimationError
        When the data cannot support the test (too few rows, degenerate predictions).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> p = rng.dirichlet(np.ones(3), 400)
    >>> y = (rng.random(400)[:, None] > p.cumsum(1)).sum(1)
    >>> r = calibration_test(p, y, test="skce-ul-asymptotic")
    >>> bool(0 <= r.pvalue <= 1)
    True
    """
    entry = TESTS.get(test)
    p, y = check_probs_labels(probs, labels)
    allowed = entry.lenses
    if lens is None:
        lens = entry.default_lens or data_lens(p.shape[1])
    LENSES.get(lens)
    if lens not in allowed:
        raise ConfigError(
            f"The {test!r} test runs on the {', '.join(allowed)} lens(es), not {lens!r}."
        )
    unknown = sorted(set(options) - set(entry.options))
    if unknown:
        raise ConfigError(
            f"Test {test!r} has no option(s) {', '.join(unknown)}; it accepts "
            f"{', '.join(entry.options) or 'none'}."
        )
    if progress is not None and entry.reports_progress:
        options = {**options, "progress": progress}
    return entry.func(p, y, lens=lens, rng=check_rng(seed), **options)
