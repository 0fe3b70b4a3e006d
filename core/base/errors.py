"""Typed errors raised by :mod:`core`.

Every error is a :class:`ValueError` subclass whose message is written for the
person using the tool: what is wrong, and how to fix it.  The dashboard shows
the message in place; the CLI prints it on one line and exits non-zero.
"""

from __future__ import annotations

import re

#: The surfaces a message is phrased for: the Python API, the command line, the dashboard.
SURFACES = ("api", "cli", "ui")

_MAPPING = "the column-mapping expander on the Data page"
#: How each surface names a loader option (:func:`core.data.load_predictions` keyword, CLI
#: flag, dashboard control): a message names the option once, :func:`arg`, and reads right
#: on every surface (:func:`phrase`).
ARGUMENTS: dict[str, dict[str, str]] = {
    "label_column": {
        "api": "label_column=",
        "cli": "--label-column",
        "ui": f"the “Label column” choice in {_MAPPING}",
    },
    "prob_columns": {
        "api": "prob_columns=",
        "cli": "--prob-columns",
        "ui": f"the “Probability columns” choice in {_MAPPING}",
    },
    "positive_class": {
        "api": "positive_class=",
        "cli": "--positive-class",
        "ui": f"the “Positive class” box in {_MAPPING}",
    },
    "class_names": {
        "api": "class_names=",
        "cli": "--class-names",
        "ui": "a header row naming the probability columns in the file",
    },
    "labels": {
        "api": "labels=",
        "cli": "--labels",
        "ui": "the labels-file uploader on the Data page",
    },
    "renormalize": {
        "api": "renormalize=True",
        "cli": "--renormalize",
        "ui": f"the “Renormalise rows that do not sum to 1” checkbox in {_MAPPING}",
    },
    "drop_missing": {
        "api": "drop_missing=True",
        "cli": "--drop-missing",
        "ui": f"the “Drop rows with missing values” checkbox in {_MAPPING}",
    },
    "as_probabilities": {
        "api": "load with logits=False to see what is wrong with them",
        "cli": "run with --logits no to see what is wrong with them",
        "ui": "their negative values (or rows that do not sum to 1) are what is wrong with "
        "them: correct them in the file, since the Data page reads such scores as logits",
    },
    "stream": {
        "api": "core.analyze_stream",
        "cli": "--engine stream",
        "ui": "the command line (calibscope metrics FOLDER --engine stream)",
    },
    "estimator": {
        "api": "estimator=",
        "cli": "--estimator",
        "ui": "the sidebar's “Estimator” choice",
    },
    "lens": {"api": "lens=", "cli": "--lens", "ui": "the sidebar's “Lens” choice"},
    "binning": {"api": "binning=", "cli": "--binning", "ui": "the sidebar's “Binning” choice"},
    "n_resamples": {
        "api": "n_resamples=",
        "cli": "--resamples",
        "ui": "the “Resamples (bootstrap, consistency)” box",
    },
    "max_row_work": {
        "api": "raise max_row_work= (None runs it whatever it costs)",
        "cli": "run it anyway (the command line has no such limit)",
        "ui": "press “Run it anyway (slow)” below",
    },
    "logits": {
        "api": "logits=True",
        "cli": "--logits yes",
        "ui": "probabilities computed from the logits (the Data page converts logits only "
        "when it detects them)",
    },
}
_START, _VALUE, _END = "\x1e", "\x1d", "\x1f"
_MARK = re.compile(f"{_START}(\\w+)(?:{_VALUE}(.*?))?{_END}", re.DOTALL)


def arg(name: str, value: object = None) -> str:
    """Name a loader option in a message, to be phrased for each surface by :func:`phrase`.

    Parameters
    ----------
    name : str
        A key of :data:`ARGUMENTS`.
    value : object, optional
        The value the user gave it (shown as ``name=value``, ``--flag value`` or
        ``control (value)``).

    Returns
    -------
    str
        A marker that :func:`render` replaces.
    """
    if name not in ARGUMENTS:
        raise KeyError(f"no phrasing for the option {name!r}")
    if value is None:
        return f"{_START}{name}{_END}"
    return f"{_START}{name}{_VALUE}{value}{_END}"


def render(template: str, surface: str = "api") -> str:
    """Return a message with every :func:`arg` marker phrased for ``surface``."""
    if surface not in SURFACES:
        raise ValueError(f"surface must be one of {', '.join(SURFACES)}, not {surface!r}")

    def one(match: re.Match[str]) -> str:
        words = ARGUMENTS[match.group(1)][surface]
        value = match.group(2)
        if value is None:
            return words
        if surface == "api":
            return f"{words.removesuffix('=True')}{'' if words.endswith('=') else '='}{value}"
        if surface == "cli":
            return f"{words} {value}"
        return f"{words} ({value})"

    return _MARK.sub(one, template)


def phrase(exc: BaseException, surface: str) -> str:
    """Return an error's message as ``surface`` says it (``"api"``, ``"cli"`` or ``"ui"``).

    A :class:`CalibscopeError` keeps its message with the options it names marked
    (:func:`arg`); ``str(exc)`` is the API's phrasing, the CLI names its flags and the
    dashboard its controls. Any other exception is ``str(exc)``.
    """
    template = getattr(exc, "template", None)
    return render(template, surface) if isinstance(template, str) else str(exc)


class CalibscopeError(ValueError):
    """Base class of every error raised deliberately by :mod:`core`.

    Parameters
    ----------
    message : str
        What is wrong and how to fix it; loader options named with :func:`arg` are phrased
        per surface by :func:`phrase` (``str(exc)`` gives the API's words).
    """

    def __init__(self, message: object = "", *args: object) -> None:
        text = str(message)
        super().__init__(render(text), *args)
        self.template = text

    def __reduce__(self) -> tuple:
        return type(self), (self.template, *self.args[1:])

    def prefixed(self, prefix: str) -> CalibscopeError:
        """Put ``prefix`` (e.g. the file's name) before the message, in place; return self."""
        self.template = f"{prefix}{self.template}"
        self.args = (render(self.template), *self.args[1:])
        return self


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
        return _data_error, (type(self), self.template, self.rows)


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
    """An output cannot be written.

    A figure as an image here (no kaleido, or no Chrome or Chromium), or a file at the path
    given (a missing folder, a read-only file, a full disk).
    """
