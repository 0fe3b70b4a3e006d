"""One description of each numeric option: its range, its default and its words.

An option that a person sets as a whole number (the number of bins, the bootstrap's
resamples, ...) is described once here, as a :class:`WholeNumber`. Every surface reads that
description: :class:`core.analyses.analysis.AnalysisConfig` checks a value with
:meth:`WholeNumber.check`, the command line parses one with :meth:`WholeNumber.parse`, and
the dashboard's widgets take their bounds from :attr:`WholeNumber.minimum` and
:attr:`WholeNumber.maximum`, so a value one surface takes is a value every surface takes.

Choices (lenses, binnings, estimators, ...) are described by their registries. The defaults
the command line shows beside them (:data:`DEFAULT_METRICS`, :data:`DEFAULT_TEST`) are here, so
that its parser reads every default without loading an analysis.
"""

from __future__ import annotations

import argparse
import numbers
from dataclasses import dataclass

from core.base.errors import ConfigError

__all__ = [
    "BATCH_ROWS",
    "DEFAULT_METRICS",
    "DEFAULT_TEST",
    "GROUP_ROWS",
    "KERNEL_SAMPLE",
    "N_BINS",
    "N_RESAMPLES",
    "N_TEST_RESAMPLES",
    "WholeNumber",
    "whole_number",
]


def whole_number(name: str, value: object, minimum: int) -> int:
    """Return ``value`` as an int of at least ``minimum``, or raise :class:`ConfigError`.

    Whole numbers, strings of digits (as in links) and floats with no fraction are taken.

    Examples
    --------
    >>> whole_number("seed", "7", 0), whole_number("seed", 7.0, 0)
    (7, 7)
    """
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value.strip())
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ConfigError(f"{name} must be a whole number ≥ {minimum}; got {value!r}.")
    return int(value)


@dataclass(frozen=True)
class WholeNumber:
    """A whole-number option: its name, range, default and how the command line words it.

    Attributes
    ----------
    name : str
        The API's name (an :class:`~core.analyses.analysis.AnalysisConfig` field or keyword).
    minimum, maximum : int
        The range, both ends included.
    default : int or None
        The value when none is given (None: set where the option is read).
    words : str
        What the command line calls it in a message ("bins").
    why : str
        Why the maximum is where it is.
    """

    name: str
    minimum: int
    maximum: int
    default: int | None
    words: str
    why: str = ""

    def check(self, value: object) -> int:
        """Return the value as an int in range, or raise :class:`~core.base.errors.ConfigError`.

        Read as :func:`whole_number` reads it.

        Examples
        --------
        >>> N_BINS.check("20"), N_BINS.check(20.0)
        (20, 20)
        """
        value = whole_number(self.name, value, self.minimum)
        if value > self.maximum:
            raise ConfigError(f"{self.name} must be at most {self.maximum:,}; got {int(value):,}.")
        return int(value)

    def parse(self, text: str) -> int:
        """Parse a command-line value (``1e3`` and ``1_000`` too), as an argparse type.

        Raises
        ------
        argparse.ArgumentTypeError
            Naming the range, for text that is not a whole number within it.
        """
        wanted = f"a whole number from {self.minimum:,} to {self.maximum:,} ({self.words})"
        try:
            value = float(text.replace("_", ""))
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {wanted}; got {text!r}") from None
        if not value.is_integer() or not self.minimum <= value <= self.maximum:
            raise argparse.ArgumentTypeError(f"must be {wanted}; got {text}")
        return int(value)


#: The number of bins of every binning, estimator, page and command.
N_BINS = WholeNumber(
    "n_bins",
    1,
    10_000,
    15,
    "bins",
    "past it bins hold a handful of rows at any sample size a machine holds, and per-bin "
    "tables and bootstrap chunks grow with the count",
)
#: Bootstrap resamples per statistic (0: no intervals).
N_RESAMPLES = WholeNumber(
    "n_resamples",
    0,
    100_000,
    1000,
    "bootstrap resamples",
    "the Monte Carlo error of a 95% interval is long negligible, and each resample costs "
    "a pass over the data",
)
#: Resamples of a resampling calibration test.
N_TEST_RESAMPLES = WholeNumber("n_resamples", 1, N_RESAMPLES.maximum, 1000, "test resamples")
#: Rows of a kernel estimator's point estimate (0: all rows).
KERNEL_SAMPLE = WholeNumber(
    "kernel_sample", 0, 1_000_000, 5000, "kernel rows", "the pairs of the sample grow as its square"
)
#: The metrics compared by default: ECE, debiased ℓ2, label-binned, the sweep, Brier, log loss.
DEFAULT_METRICS: tuple[str, ...] = (
    "plugin@1",
    "debiased@2",
    "label-binned@1",
    "sweep@1",
    "brier",
    "log-loss",
)
#: The test of a report (and of the Compare page) unless another is asked for: the block SKCE
#: test — linear time (blocks of at most 100 rows), an asymptotic normal p-value, any number
#: of classes on the canonical lens, and the power the linear test lacks (docs/formulas.md,
#: "The headline test").
DEFAULT_TEST = "skce-block"
#: Rows per batch of the stream engine.
BATCH_ROWS = WholeNumber(
    "batch_rows", 1, 50_000_000, 1_000_000, "rows per batch", "memory grows with the batch"
)
#: Fewest rows of a group that is analysed on its own.
GROUP_ROWS = WholeNumber("min_group_rows", 1, 10**9, 30, "group rows")
