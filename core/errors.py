"""Typed errors raised by :mod:`core`.

Every error is a :class:`ValueError` subclass whose message is written for the
person using the tool: what is wrong, and how to fix it.  The dashboard shows
the message in place; the CLI prints it on one line and exits non-zero.
"""

from __future__ import annotations


class CalibscopeError(ValueError):
    """Base class of every error raised deliberately by :mod:`core`."""


class DataError(CalibscopeError):
    """The predictions or labels cannot be used as given (file, columns, values).

    Parameters
    ----------
    message : str
        What is wrong and how to fix it.
    rows : sequence of int, optional
        The first offending data rows the message names (0-based), so that a reader of many
        files can say in which file and at which row they are.
    """

    def __init__(self, message: str = "", *, rows: tuple[int, ...] = ()) -> None:
        super().__init__(message)
        self.rows = tuple(int(r) for r in rows)

    def __reduce__(self) -> tuple:
        # rows are keyword-only: kept when the error crosses processes (Dask)
        return _data_error, (type(self), str(self), self.rows)


def _data_error(cls: type, message: str, rows: tuple[int, ...]) -> DataError:
    err = DataError.__new__(cls)
    DataError.__init__(err, message, rows=rows)
    return err


class ConfigError(CalibscopeError):
    """An option is unknown, out of range, or incompatible with another option."""


class EstimationError(CalibscopeError):
    """An estimator or test cannot be computed on this data (e.g. too few rows per bin)."""


class FitError(CalibscopeError):
    """A recalibrator cannot be fitted on this data (e.g. a single class)."""


class ExportError(CalibscopeError):
    """A figure cannot be written as an image here (no kaleido, or no Chrome/Chromium)."""
