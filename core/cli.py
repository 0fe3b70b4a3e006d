"""The ``calibscope`` command line: the dashboard's analyses for batch jobs and CI.

``calibscope metrics FILE`` loads predictions (CSV or Parquet, with ``--labels``
for a separate labels file), runs :func:`core.analyses.analysis.analyze` and prints the
calibration errors and scores with bootstrap intervals, as a table or as JSON
(``--json``: every number, the config, the seed, the lint findings and the
versions). ``calibscope lint FILE`` prints the data checks only. ``calibscope compare
FILE`` compares the models of a file's ``model`` column on identical bins
(:func:`core.analyses.model_comparison.compare_models`; with ``--engine stream|dask``,
:func:`core.stream.compare.run_comparison` on files of any size). ``calibscope report FILE -o report.html``
writes the self-contained HTML report (``-o report.json`` or ``--json``: every number) of
:func:`core.report.build_report`.

Bad input gives one line on stderr (``calibscope: error: ...``) and exit code 2; an
unexpected failure one line and exit code 1 (``--debug`` prints its traceback); Ctrl-C one
line and exit code 130. ``-o`` never names an input, and is written whole or not at all.
Long runs print short progress lines on stderr (at once on a terminal, else after a few
seconds); stdout holds only the result. Files are read within the load limits of
:class:`core.data.limits.LoadLimits`, set by the ``CALIBSCOPE_MAX_*`` environment variables.
Choices of ``--lens``, ``--binning`` and ``--estimator`` come from the registries.
"""

from __future__ import annotations

import argparse
import contextlib
import fnmatch
import glob
import math
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from importlib import import_module
from pathlib import Path
from typing import IO, Any, NoReturn

from core.base.errors import CalibscopeError, phrase
from core.base.files import check_writable, write_atomically
from core.base.names import quoted
from core.base.options import (
    BATCH_ROWS,
    DEFAULT_METRICS,
    DEFAULT_TEST,
    GROUP_ROWS,
    N_BINS,
    N_RESAMPLES,
    N_TEST_RESAMPLES,
)

PROG = "calibscope"
#: Where rows are read: loaded in memory, streamed in batches, or on Dask partitions.
ENGINES = ("memory", "stream", "dask")

EXIT_OK = 0
#: ``calibscope check``: the gate failed (the data say the model is not calibrated enough).
EXIT_FAILED = 1
#: An unexpected failure (a bug): one line, and the traceback with --debug.
EXIT_INTERNAL = 1
#: ``calibscope check``: a scope could not be judged (its estimate or test is undefined on
#: its rows) and none failed: neither a pass nor a fail.
EXIT_UNJUDGED = 3
EXIT_ERROR = 2
#: Interrupted (Ctrl-C), as shells report a SIGINT.
EXIT_INTERRUPTED = 130

#: Progress lines start after this many seconds when stderr is not a terminal ...
PROGRESS_DELAY = 5.0
#: ... and repeat, while a step lasts, at most this often (updates within a step).
PROGRESS_EVERY = 10.0


class _Choices:
    """The names of a registry (or a tuple) of a module, imported when first asked for.

    The parser is built and most arguments are parsed without loading an analysis: a choice
    is looked up only when it is given, or when a help is printed.

    Parameters
    ----------
    module : str
        The module that holds the names.
    name : str
        Its registry (whose ``names(**where)`` are the choices) or tuple of names.
    extra : tuple of str
        Choices after the names.
    **where
        Filters of :meth:`core.base.registry.Registry.names`.
    """

    def __init__(self, module: str, name: str, *extra: str, **where: Any) -> None:
        self._source = (module, name, where)
        self._extra = extra
        self._names: tuple[str, ...] | None = None

    @property
    def loaded(self) -> bool:
        """Whether the names were read."""
        return self._names is not None

    def names(self) -> tuple[str, ...]:
        """Return the names (importing their module the first time)."""
        if self._names is None:
            module, name, where = self._source
            found = getattr(import_module(module), name)
            names = found.names(**where) if hasattr(found, "names") else found
            self._names = (*names, *self._extra)
        return self._names

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __contains__(self, value: object) -> bool:
        return value in self.names()

    def __len__(self) -> int:
        return len(self.names())


#: Where the calibration tests' names are.
_TESTS_AT = ("core.analyses.calibration_tests", "TESTS")


class _Formatter(argparse.HelpFormatter):
    """Argparse's formatter, which leaves choices not yet read unread."""

    def _metavar_formatter(self, action: argparse.Action, default_metavar: str) -> Any:
        # argparse formats every argument as it is added (a check of its metavar); the names
        # are read before a help is printed (_Parser.format_help)
        if isinstance(action.choices, _Choices) and not action.choices.loaded:
            return lambda size: (default_metavar,) * size
        return super()._metavar_formatter(action, default_metavar)


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line and exit code 2."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_ERROR, f"{PROG}: error: {message} (see {self.prog} --help)\n")

    def format_usage(self) -> str:
        self._read_choices()
        return super().format_usage()

    def format_help(self) -> str:
        self._read_choices()
        return super().format_help()

    def _read_choices(self) -> None:
        for action in self._actions:
            if isinstance(action.choices, _Choices):
                action.choices.names()


class _Failure(Exception):
    """An error already phrased for the user."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line.

    Parameters
    ----------
    argv : sequence of str, optional
        Arguments without the program name; default ``sys.argv[1:]``.

    Returns
    -------
    int
        ``0`` on success, ``2`` on bad input or options, ``1`` on an unexpected failure,
        ``130`` when interrupted; each failure with one line on stderr (and the traceback
        after it with ``--debug``).
    """
    if argv is None:  # the program itself (not a call from Python): one short run
        from core.base.allocator import keep_freed_memory, small_pages

        keep_freed_memory()
        small_pages()
    argv = list(sys.argv[1:] if argv is None else argv)
    # known before parsing: a failure while parsing or importing shows its traceback too
    debug = "--debug" in argv
    try:
        return _main(argv)
    except KeyboardInterrupt:
        _say("interrupted", debug=debug)
        return EXIT_INTERRUPTED
    except (CalibscopeError, _Failure, OSError) as exc:
        _say(f"error: {_one_line(exc)}", debug=debug)
        return EXIT_ERROR
    except MemoryError:
        _say(
            "error: out of memory; use --engine stream for large files, or fewer --bins and "
            "--resamples",
            debug=debug,
        )
        return EXIT_INTERNAL
    except Exception as exc:  # a bug: one line, and the traceback on request
        hint = "" if debug else " (rerun with --debug for the traceback)"
        _say(f"internal error: {type(exc).__name__}: {_one_line(exc)}{hint}", debug=debug)
        return EXIT_INTERNAL


def _main(argv: list[str]) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:  # --help, --version or a parse error (already printed)
        return int(stop.code or 0) if not isinstance(stop.code, str) else EXIT_ERROR
    if not getattr(args, "run", None):
        parser.print_help(sys.stderr)
        return EXIT_ERROR
    if isinstance(getattr(args, "file", None), list):
        if getattr(args, "sql", None) is not None:
            if args.file:
                raise _Failure("Give FILE or --sql, not both.")
            from core.data.sql import Query

            args.file = [Query(args.sql)]
        elif not args.file:
            raise _Failure("Give the predictions: FILE (or several), or --sql QUERY.")
        # several files are several models; args.file names them as given
        args.files = args.file
        args.file = str(args.files[0]) if len(args.files) == 1 else " + ".join(args.files)
    check_output(args)
    with Progress(sys.stderr) as progress:
        args.progress = progress
        text = args.run(args)
    if args.output and args.output != "-":
        write_atomically(Path(args.output), text)
    else:
        sys.stdout.write(text)
    return getattr(args, "exit_code", EXIT_OK)


def _one_line(exc: BaseException) -> str:
    # a core error names the CLI's flags (core.base.errors.phrase), not the API's arguments
    return " ".join(phrase(exc, "cli").split()) or type(exc).__name__


def _say(message: str, *, debug: bool) -> None:
    if debug and sys.exc_info()[0] is not None:
        traceback.print_exc(file=sys.stderr)
    print(f"{PROG}: {message}", file=sys.stderr)


# ---------------------------------------------------------------------------------------------
# what a run reads and writes


def check_output(args: argparse.Namespace) -> None:
    """Refuse an ``-o`` that is, or could become, one of the run's inputs.

    An input given as a folder holds the output if it lies inside; one given as a glob, if
    the pattern matches it (the next run would read it as a part).

    Raises
    ------
    _Failure
        Naming the output and the input it would overwrite.
    """
    outputs = [
        (flag, given)
        for flag, given in (
            ("-o", getattr(args, "output", None)),
            ("--junit", getattr(args, "junit", None)),
        )
        if given
    ]
    if len(outputs) == 2:
        (_, a), (_, b) = outputs
        if a == b == "-" or (a != "-" and b != "-" and _same_file(a, b)):
            raise _Failure(
                f"-o and --junit both name {b}; the one would overwrite the other: give "
                "two different files."
            )
    elif outputs and outputs[0] == ("--junit", "-"):
        raise _Failure(
            "--junit - and the output would both go to standard output; give --junit a "
            "file, or -o FILE for the output."
        )
    for flag, given_out in outputs:
        if given_out == "-":  # standard output
            continue
        out = Path(given_out)
        if out.is_dir():
            raise _Failure(f"{flag} {given_out} is a folder; give the name of the file to write.")
        check_writable(out)
        for given in (*getattr(args, "files", [args.file]), getattr(args, "labels", None)):
            if given and isinstance(given, str | os.PathLike) and _is_input(out, str(given)):
                raise _Failure(
                    f"{flag} {given_out} would overwrite the input {given}; write the output to "
                    "another file."
                )


def _same_file(a: str, b: str) -> bool:
    if os.path.exists(a) and os.path.exists(b):
        return os.path.samefile(a, b)  # hard links and symlinks included
    return os.path.realpath(a) == os.path.realpath(b)


def _is_input(out: Path, given: str) -> bool:
    if "://" in given:  # remote storage: never a local output
        return False
    target = out.resolve()
    path = Path(given)
    if path.is_dir():
        return target.is_relative_to(path.resolve())
    candidates = [path]
    if any(ch in given for ch in "*?[") and not path.exists():
        if fnmatch.fnmatch(str(target), str(Path(given).absolute())) or fnmatch.fnmatch(
            str(target), str(Path(os.path.realpath(Path(given).parent)) / Path(given).name)
        ):
            return True
        candidates = [Path(p) for p in glob.glob(given, recursive=True)]
    for p in candidates:
        if out.exists() and p.exists():
            if os.path.samefile(out, p):  # hard links and symlinks included
                return True
        elif target == p.resolve():
            return True
    return False


class Progress:
    """Short progress lines on stderr, for runs long enough to need them.

    On a terminal the lines start at once; otherwise (a log, a CI job) once the run has
    lasted :data:`PROGRESS_DELAY` seconds, so quick runs print nothing. A new step prints a
    line; updates within a step (a pass's rows, a bootstrap's resamples) at most every
    :data:`PROGRESS_EVERY` seconds, and a step that lasts is repeated as often, from a
    watcher thread, so that a long computation without updates still shows it is alive.

    Parameters
    ----------
    stream : text file
        Where the lines go (stderr; stdout holds only the result).
    delay : float, optional
        Seconds before the first line when ``stream`` is not a terminal.
    every : float, optional
        Seconds between lines within a step.
    """

    def __init__(
        self, stream: IO[str], *, delay: float | None = None, every: float | None = None
    ) -> None:
        self.stream = stream
        isatty = getattr(stream, "isatty", None)
        quiet = PROGRESS_DELAY if delay is None else delay
        self.delay = 0.0 if isatty is not None and isatty() else quiet
        self.every = PROGRESS_EVERY if every is None else every
        self.start = time.monotonic()
        self.step: str | None = None
        self.detail = ""
        self.shown: str | None = None
        self.last = -math.inf
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.thread: threading.Thread | None = None

    def __enter__(self) -> Progress:
        self.thread = threading.Thread(target=self._watch, name="calibscope-progress", daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.done.set()
        if self.thread is not None:
            self.thread.join()

    def __call__(self, step: str) -> None:
        """Start a step (a line at once, once lines are due)."""
        with self.lock:
            self.step, self.detail = step, ""
            self._show(time.monotonic())

    def update(self, fraction: float, message: str) -> None:
        """Report progress within the step, as ``progress(fraction, message)`` callbacks do."""
        with self.lock:
            self.detail = f"{message} ({fraction:.0%})" if fraction > 0 else message
            self._show(time.monotonic())

    def _watch(self) -> None:
        while not self.done.wait(0.5):
            with self.lock:
                self._show(time.monotonic())

    def _show(self, now: float) -> None:
        if self.step is None or now - self.start < self.delay:
            return
        new = self.step != self.shown
        if not new and now - self.last < self.every:
            return
        elapsed = now - self.start
        detail = f": {self.detail}" if self.detail else ""
        print(f"{PROG}: {self.step}{detail} [{elapsed:.0f}s]", file=self.stream, flush=True)
        self.shown, self.last = self.step, now


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser (choices read from the registries).

    Returns
    -------
    argparse.ArgumentParser
        The parser with one sub-command per entry of :data:`COMMANDS`.
    """
    import core

    parser = _Parser(
        prog=PROG,
        description="Assess the calibration of probabilistic classifiers from saved predictions.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {core.__version__}")
    parser.add_argument("--debug", action="store_true", help=_DEBUG_HELP)
    sub = parser.add_subparsers(title="commands", metavar="COMMAND", parser_class=_Parser)
    for name, (help_text, add_arguments, run) in COMMANDS.items():
        cmd = sub.add_parser(name, help=help_text, description=help_text, epilog=_EPILOG)
        add_arguments(cmd)
        # after the command too; SUPPRESS keeps a --debug given before it
        cmd.add_argument(
            "--debug", action="store_true", default=argparse.SUPPRESS, help=_DEBUG_HELP
        )
        cmd.set_defaults(run=run)
    return parser


_DEBUG_HELP = "print the traceback of a failure after its one-line message"
_EPILOG = (
    "Files are read within load limits, set by environment variables: CALIBSCOPE_MAX_BYTES "
    "(1G; bytes held in memory, after gzip), CALIBSCOPE_MAX_ROWS (20000000), "
    "CALIBSCOPE_MAX_COLUMNS (25000), CALIBSCOPE_MAX_RATIO (200; gzip expansion). "
    "--engine stream checks only the columns and the gzip ratio."
)


# ---------------------------------------------------------------------------------------------
# shared options


def _add_input_arguments(cmd: argparse.ArgumentParser) -> None:
    cmd.add_argument(
        "file",
        metavar="FILE",
        nargs="*",
        help="predictions: CSV or Parquet; a folder or quoted glob of part files is one "
        "dataset, read as --engine stream reads it; several files are several models (one per "
        "file, named after it, sharing --labels)",
    )
    cmd.add_argument(
        "--sql",
        metavar="QUERY",
        help='instead of FILE: the rows of one DuckDB SELECT query, e.g. "SELECT p, label '
        "FROM read_parquet('logs/*.parquet') WHERE day >= '2026-11-01'\" (run once; read in "
        "memory or with --engine stream)",
    )
    cmd.add_argument(
        "--labels", metavar="FILE", help="separate labels file (one label per row, same order)"
    )
    cmd.add_argument("--label-column", metavar="NAME", help="label column (default: inferred)")
    cmd.add_argument(
        "--prob-columns",
        metavar="A,B,...",
        help="probability columns in class order, comma-separated (default: inferred)",
    )
    cmd.add_argument("--positive-class", metavar="VALUE", help="label value P(y=1) refers to")
    cmd.add_argument(
        "--class-names",
        metavar="A,B,...",
        help="names of the probability columns of a headerless file, in column order "
        "(the labels may then be these names)",
    )
    cmd.add_argument(
        "--logits",
        choices=("auto", "yes", "no"),
        default="auto",
        help="whether the scores are logits (default: detect)",
    )
    cmd.add_argument(
        "--renormalize", action="store_true", help="divide rows not summing to 1 by their sum"
    )
    cmd.add_argument(
        "--drop-missing", action="store_true", help="drop rows with NaN/inf or missing labels"
    )
    cmd.add_argument("--model", metavar="NAME", help="analyse only this model of a long file")
    cmd.add_argument("--json", action="store_true", help="print JSON instead of a table")
    cmd.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="write to FILE instead of stdout (a file is replaced whole, a link's file "
        "written, a device or FIFO written through; - is stdout)",
    )
    cmd.add_argument(
        "--engine",
        choices=ENGINES,
        default="memory",
        help="memory (default): load FILE; stream: read FILE (a file, folder or glob of parts) "
        "in batches, for files larger than memory; dask: partitions of a Parquet dataset on a "
        "Dask cluster",
    )
    cmd.add_argument(
        "--batch-rows",
        type=BATCH_ROWS.parse,
        default=BATCH_ROWS.default,
        metavar="N",
        help="rows per batch of the stream engine, and per read of a Dask task (memory grows "
        "with it)",
    )
    cmd.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="Dask scheduler, e.g. tcp://host:8786 (default: a local cluster)",
    )


def _load_options(args: argparse.Namespace, keep_columns: Sequence[str] = ()) -> Any:
    from core.stream.load import LoadOptions

    if args.labels:
        raise _Failure(
            f"--engine {args.engine} reads the labels from a column of the same files; "
            "--labels (a separate labels file) needs --engine memory."
        )
    prob_columns = None
    if args.prob_columns:
        prob_columns = tuple(c.strip() for c in args.prob_columns.split(",") if c.strip())
    return LoadOptions(
        prob_columns=prob_columns,
        label_column=_label_column(args.label_column),
        positive_class=args.positive_class,
        class_names=_class_names(args),
        logits={"auto": "auto", "yes": True, "no": False}[args.logits],
        renormalize=args.renormalize,
        drop_missing=args.drop_missing,
        keep_columns=tuple(keep_columns),
    )


@contextlib.contextmanager
def _runner(args: argparse.Namespace, keep_columns: Sequence[str] = ()) -> Iterator[Any]:
    """Yield the stream or Dask runner of ``--engine`` (a Dask client open meanwhile)."""
    if len(getattr(args, "files", ())) > 1:
        raise _Failure(
            f"--engine {args.engine} reads one dataset (a file, a folder or a glob of its parts), "
            "not one file per model; leave out --engine to compare the files as models, or give "
            "the parts as a folder or a quoted glob."
        )
    load = _load_options(args, keep_columns)
    source = getattr(args, "files", [args.file])[0]
    _step(args, f"reading {args.file} (--engine {args.engine})")
    if args.engine == "stream":
        from core.stream.engine import StreamRunner

        progress = getattr(args, "progress", None)
        with StreamRunner(
            source,
            load,
            batch_rows=args.batch_rows,
            progress=None if progress is None else progress.update,
        ) as runner:
            yield runner
        return
    from core.stream.dask import DaskRunner, check_source, dask_client

    check_source(source)
    with dask_client(args.scheduler) as client:
        yield DaskRunner(source, load, client=client, batch_rows=args.batch_rows)


def _n_classes(runner: Any) -> int:
    return len(runner.plan().class_names)


def _label_column(text: str | None) -> str | int | None:
    """Return ``--label-column``: a name, or a position ``0, 1, ...`` of a headerless file."""
    if text is None:
        return None
    if text.strip().isdigit():
        return int(text)
    if text.strip().startswith("-") and text.strip()[1:].isdigit():
        # -0 would be position 0, and -1 the last column: a sign is a slip, not a choice
        raise _Failure(
            f"--label-column {text} is not a column position: positions count from 0 (the "
            "first column); give 0, 1, ... or a column name."
        )
    return text


def _is_dataset(given: Any) -> bool:
    """Whether FILE names part files (a folder or a glob), read as the stream reads them."""
    if not isinstance(given, str) or "://" in given:
        return False
    path = Path(given)
    return path.is_dir() or (any(ch in given for ch in "*?[") and not path.exists())


def _load(args: argparse.Namespace, *, keep_columns: list[str] | None = None) -> Any:
    from core.data import load_models, load_predictions

    files = getattr(args, "files", [args.file])
    _step(args, f"loading {args.file}")
    prob_columns = None
    if args.prob_columns:
        prob_columns = [c.strip() for c in args.prob_columns.split(",") if c.strip()]
    if len(files) == 1 and _is_dataset(files[0]):
        if args.labels:
            raise _Failure(
                f"{files[0]} is a dataset of part files, whose labels are a column of the parts; "
                "--labels (a separate labels file) reads one predictions file."
            )
        from core.stream.gather import load_parts

        rows = getattr(args, "batch_rows", BATCH_ROWS.default)
        return load_parts(files[0], _load_options(args, keep_columns or ()), batch_rows=rows)
    load, source = (load_predictions, files[0]) if len(files) == 1 else (load_models, files)
    pred = load(
        source,
        labels=args.labels,
        prob_columns=prob_columns,
        label_column=_label_column(args.label_column),
        positive_class=args.positive_class,
        class_names=_class_names(args),
        logits={"auto": "auto", "yes": True, "no": False}[args.logits],
        renormalize=args.renormalize,
        drop_missing=args.drop_missing,
        keep_columns=keep_columns,
    )
    return pred


def _class_names(args: argparse.Namespace) -> tuple[str, ...] | None:
    given = getattr(args, "class_names", None)
    if not given:
        return None
    return tuple(c.strip() for c in given.split(","))


def _step(args: argparse.Namespace, step: str) -> None:
    progress = getattr(args, "progress", None)
    if progress is not None:
        progress(step)


def _updates(args: argparse.Namespace) -> Callable[[float, str], None] | None:
    progress = getattr(args, "progress", None)
    return None if progress is None else progress.update


def _select_models(pred: Any, model: str | None) -> list[tuple[str | None, Any]]:
    if pred.model is None:
        if model is not None:
            raise _Failure(f"--model {model!r} given but {pred.source} has no model column.")
        return [(None, pred)]
    parts = pred.by_model()
    if model is None:
        return list(parts.items())
    if model not in parts:
        raise _Failure(
            f"No model {model!r} in {pred.source}; models: {', '.join(map(repr, parts))}."
        )
    return [(model, parts[model])]


# ---------------------------------------------------------------------------------------------
# metrics


def _add_metrics_arguments(cmd: argparse.ArgumentParser, *, headline: bool = True) -> None:
    _add_input_arguments(cmd)
    cmd.add_argument(
        "--lens",
        choices=_Choices("core.stats.lenses", "LENSES"),
        help="default: binary for one P(y=1) column or two classes, else top-label; with a "
        "kernel --estimator, that estimator's default lens (canonical for SKCE and KDE)",
    )
    cmd.add_argument(
        "--binning", choices=_Choices("core.stats.binning", "BINNINGS"), default="equal-width"
    )
    cmd.add_argument(
        "--bins",
        type=N_BINS.parse,
        default=N_BINS.default,
        metavar="N",
        help=f"number of bins ({N_BINS.default}; at most {N_BINS.maximum:,})",
    )
    cmd.add_argument("--norm", choices=("1", "2", "inf"), default="1", help="ℓp norm (1 = ECE)")
    if headline:
        cmd.add_argument(
            "--estimator",
            choices=_Choices("core.estimators", "ESTIMATORS"),
            default="plugin",
            help="headline estimator",
        )
    cmd.add_argument("--tie-policy", choices=("split", "keep"), default="split")
    cmd.add_argument(
        "--convention",
        choices=_Choices("core.stats.conventions", "CONVENTIONS"),
        default="calibscope",
        help="whose bins: calibscope's or a library's, reproducing its value (calibscope)",
    )
    cmd.add_argument("--seed", type=int, default=0, help="the one seed (0)")
    cmd.add_argument(
        "--resamples",
        type=N_RESAMPLES.parse,
        default=N_RESAMPLES.default,
        metavar="R",
        help=f"bootstrap resamples ({N_RESAMPLES.default}; 0 = none; at most "
        f"{N_RESAMPLES.maximum:,})",
    )
    cmd.add_argument(
        "--bootstrap",
        choices=_Choices("core.analyses.analysis", "BOOTSTRAP_MODES"),
        default="auto",
        help="exact: resample rows; cells: the cell bootstrap (what --engine stream|dask "
        "always use); auto (default): exact up to 10⁷ row-resamples, else cells",
    )
    cmd.add_argument(
        "--confidence-level",
        "--level",
        dest="confidence_level",
        type=float,
        default=0.95,
        help="confidence level of the intervals (0.95)",
    )
    cmd.add_argument(
        "--bootstrap-interval",
        choices=_Choices("core.stats.intervals", "BOOTSTRAP_INTERVALS"),
        default="percentile",
        help="percentile (default): where resampled estimates fall; basic: the pivotal "
        "interval around the estimate, the estimator's bias at this n removed",
    )
    if headline:
        cmd.add_argument(
            "--interval-method",
            choices=_Choices("core.stats.intervals", "INTERVAL_METHODS"),
            default="wilson",
            help="per bin",
        )


def _add_test_resamples(cmd: argparse.ArgumentParser) -> None:
    cmd.add_argument(
        "--test-resamples",
        type=N_TEST_RESAMPLES.parse,
        default=N_TEST_RESAMPLES.default,
        metavar="R",
        help=f"resampling tests ({N_TEST_RESAMPLES.default})",
    )


def _add_min_group_rows(cmd: argparse.ArgumentParser, what: str) -> None:
    cmd.add_argument(
        "--min-group-rows",
        type=GROUP_ROWS.parse,
        default=GROUP_ROWS.default,
        metavar="N",
        help=f"{what} ({GROUP_ROWS.default})",
    )


def _add_metrics_command_arguments(cmd: argparse.ArgumentParser) -> None:
    _add_metrics_arguments(cmd)
    cmd.add_argument(
        "--by",
        action="append",
        metavar="COLUMN",
        help="calibration per subgroup of COLUMN (`group` or any column of the file); repeat "
        "for intersections of several columns",
    )
    _add_min_group_rows(cmd, "groups or windows with fewer rows are shown, not judged")
    cmd.add_argument(
        "--window",
        metavar="day|week|N",
        help="calibration per time window: calendar days, weeks, or N rows (in --time order); "
        "with --engine stream|dask, per window over part files (e.g. 'daily/*.parquet'), "
        "intervals from the cell bootstrap, and N-row windows in file order (--time must then "
        "be sorted in that order)",
    )
    cmd.add_argument("--time", metavar="COLUMN", help="the time column of --window")
    cmd.add_argument(
        "--threshold",
        type=float,
        metavar="X",
        help="with --window: name the first window whose error exceeds X",
    )


def _window_every(text: str) -> str | int:
    from core.analyses.subgroups import WINDOW_UNITS

    if text.strip().isdigit() and int(text) >= 1:
        return int(text)
    if text.strip() in WINDOW_UNITS:
        return text.strip()
    raise _Failure(f"--window {text}: give day, week or a number of rows (e.g. 1000).")


def _config(args: argparse.Namespace, n_classes: int) -> Any:
    from core.analyses.analysis import AnalysisConfig
    from core.estimators import ESTIMATORS

    estimator = getattr(args, "estimator", "plugin")
    info = ESTIMATORS.get(estimator)
    # no --lens: the rule of calibration_error (EstimatorInfo.lens_for)
    lens = info.lens_for(n_classes, args.lens)
    return AnalysisConfig(
        lens=lens,
        binning=args.binning,
        n_bins=args.bins,
        norm=args.norm,
        estimator=estimator,
        tie_policy=args.tie_policy,
        seed=args.seed,
        n_resamples=args.resamples,
        confidence_level=args.confidence_level,
        bootstrap=getattr(args, "bootstrap", "auto"),
        bootstrap_interval=getattr(args, "bootstrap_interval", "percentile"),
        interval_method=getattr(args, "interval_method", "wilson"),
        convention=getattr(args, "convention", "calibscope"),
    )


def _run_metrics_stream(args: argparse.Namespace, window: str | None) -> str:
    """Return the metrics of a stream or a Dask job (``--engine stream|dask``) and windows."""
    from core.base import records
    from core.stream.analysis import check_stream_config, run_analysis

    every = _window_every(window) if window else None
    with _runner(args, keep_columns=(args.time,) if window and args.time else ()) as runner:
        config = _config(args, _n_classes(runner))
        check_stream_config(config)
        if window:  # a bad window option fails before the first pass over the rows
            from core.analyses.subgroups import GroupOptions, WindowOptions
            from core.stream.windows import check_windows, run_windows

            spans = WindowOptions(args.time, every, args.threshold)  # type: ignore[arg-type]
            options = GroupOptions(min_rows=args.min_group_rows)
            check_windows(runner, config, spans, options)
        result = run_analysis(runner, config, model=args.model)
        if window:
            _step(args, f"windows of {args.file}")
            windows = run_windows(runner, config, spans, options, model=args.model)
    source, results = result.input, list(result.results)
    if args.json:
        record = records.metrics_record(source, config, results, file=args.file, labels=None)
        if window:
            for entry in record["results"]:
                entry["windows"] = windows[entry["model"]].to_record()
        return records.dumps(record)
    text = _metrics_text(source, config, results)
    for name, _, _ in results if window else ():
        title = "all rows" if name is None else f"model {quoted(name)}"
        text += "\n" + _subgroup_text(windows[name].result, title, window=windows[name])
    return text


def _check_scopes(args: argparse.Namespace, by: Any, window: Any) -> None:
    """Refuse the subgroup and window options that do not go together."""
    if by and args.engine != "memory":
        raise _Failure("--by reads the rows in memory; leave out --engine.")
    if getattr(args, "threshold", None) is not None and window is None:
        raise _Failure("--threshold applies to --window; add --window day|week|N.")
    if getattr(args, "time", None) is not None and window is None:
        raise _Failure("--time names the column of --window; add --window day|week|N.")


def _run_metrics(args: argparse.Namespace) -> str:
    from core.analyses.analysis import analyze
    from core.base import records

    by, window = getattr(args, "by", None), getattr(args, "window", None)
    _check_scopes(args, by, window)
    if args.engine != "memory":
        return _run_metrics_stream(args, window)
    keep = [*(by or []), *([args.time] if window and args.time else [])]
    pred = _load(args, keep_columns=_kept(keep))
    config = _config(args, pred.n_classes)
    results = []
    groups: dict[str | None, Any] = {}
    windows: dict[str | None, Any] = {}
    selected = _select_models(pred, args.model)
    for i, (name, part) in enumerate(selected, start=1):
        what = "all rows" if name is None else f"model {quoted(name)} ({i} of {len(selected)})"
        _step(args, f"analysing {what}, {part.n:,} rows")
        analysis = analyze(part, config, progress=_updates(args))
        results.append((name, part, analysis))
        if by:
            from core.analyses.subgroups import subgroup_analysis

            _step(args, f"subgroups of {what} by {', '.join(by)}")
            groups[name] = subgroup_analysis(
                part, config, by=tuple(by), min_rows=args.min_group_rows
            )
        if window:
            from core.analyses.subgroups import window_analysis

            _step(args, f"windows of {what}")
            windows[name] = window_analysis(
                part,
                config,
                time=args.time,
                every=_window_every(window),
                threshold=args.threshold,
                min_rows=args.min_group_rows,
            )
    if args.json:
        record = records.metrics_record(pred, config, results, file=args.file, labels=args.labels)
        for entry in record["results"]:
            if by:
                entry["subgroups"] = groups[entry["model"]].to_record()
            if window:
                entry["windows"] = windows[entry["model"]].to_record()
        return records.dumps(record)
    text = _metrics_text(pred, config, results)
    for name, _, _ in results:
        title = "all rows" if name is None else f"model {quoted(name)}"
        if by:
            text += "\n" + _subgroup_text(groups[name], title)
        if window:
            text += "\n" + _subgroup_text(windows[name].result, title, window=windows[name])
    return text


def _kept(columns: list[str]) -> list[str] | None:
    """Columns to keep at load for --by/--time (the role column `group` is always there)."""
    out = [c for c in columns if c not in ("group", "split")]
    return out or None


def _subgroup_text(result: Any, title: str, *, window: Any = None) -> str:
    """Return the subgroup (or window) table of one model as ``calibscope metrics`` prints it."""
    from core.stats.intervals import level_words

    level = level_words(result.confidence_level, result.config.bootstrap_interval)
    what = "windows" if window is not None else f"subgroups by {', '.join(result.by)}"
    lines = [
        f"{title}: {what}: {result.metric.label} on {result.config.n_bins} "
        f"{result.config.binning} bins of all rows"
    ]
    table = [("group", "n", "value", f"{level} interval", "gap to all rows", "paired interval", "")]
    for row in result.to_frame().itertuples(index=False):
        interval = "" if _missing(row.low) else f"[{_fmt(row.low)}, {_fmt(row.high)}]"
        gap_interval = (
            "" if _missing(row.gap_low) else f"[{_fmt(row.gap_low)}, {_fmt(row.gap_high)}]"
        )
        flag = "too small" if row.small else ("significant" if row.significant else "")
        gap = "" if row.group == "(all rows)" else _fmt(row.gap)
        table.append((row.group, f"{row.n:,}", _fmt(row.value), interval, gap, gap_interval, flag))
    lines.extend(_columns(table))
    lines.append("  " + result.worst_sentence)
    lines.append("  " + result.test_sentence)
    if window is not None and window.threshold is not None:
        lines.append("  " + window.breach_sentence)
    return "\n".join(lines) + "\n"


def _metrics_text(pred: Any, config: Any, results: list) -> str:
    from core.stats.intervals import level_words

    lines = [_input_line(pred, [part.n for name, part, _ in results if name is not None])]
    cfg = config.to_dict()
    lines.append(
        "config: "
        + ", ".join(
            f"{k}={cfg[k]}"
            for k in (
                "lens",
                "binning",
                "n_bins",
                "norm",
                "estimator",
                "tie_policy",
                "convention",
                "seed",
            )
        )
        + f", n_resamples={config.n_resamples}, confidence_level={config.confidence_level:g}"
        + (
            f", bootstrap_interval={config.bootstrap_interval}"
            if config.bootstrap_interval != type(config).bootstrap_interval
            else ""
        )
    )
    interval_title = f"{level_words(config.confidence_level, config.bootstrap_interval)} interval"
    for name, part, analysis in results:
        lines.append("")
        title = f"model {quoted(name)}" if name is not None else "all rows"
        head = analysis.headline
        lines.append(
            f"{title}: n = {part.n:,}; headline {head.estimator} = {_fmt(head.value)}"
            + _interval_text(analysis.headline_interval)
        )
        table = [("metric", "value", interval_title, "note")]
        for row in analysis.metrics.itertuples(index=False):
            interval = "" if _missing(row.low) else f"[{_fmt(row.low)}, {_fmt(row.high)}]"
            table.append((row.label, _fmt(row.value), interval, row.note or ""))
        lines.extend(_columns(table))
        d = analysis.brier_decomposition
        if d is not None:
            lines.append(
                f"  Brier decomposition ({d.binning}, {d.n_bins} bins): {_fmt(d.brier)} = "
                f"REL {_fmt(d.reliability)} − RES {_fmt(d.resolution)} + UNC {_fmt(d.uncertainty)}"
                f" + within-bin variance {_fmt(d.within_bin_variance)}"
                f" {_signed(d.within_bin_covariance, 'within-bin covariance')}"
            )
        if name is not None:
            lines.extend(_finding_lines(_value_findings(part), indent="  "))
    shown = pred.lint.findings if not pred.models else _load_findings(pred)
    if shown:
        lines.append("")
        lines.append("data checks:")
        lines.extend(_finding_lines(shown, indent="  "))
    return "\n".join(lines) + "\n"


def _signed(x: float, name: str = "") -> str:
    """``+ name x`` or ``− name |x|``: a term of a sum written out."""
    named = f"{name} " if name else ""
    return f"− {named}{_fmt(-x)}" if x < 0 else f"+ {named}{_fmt(x)}"


def _value_findings(pred: Any) -> list:
    from core.data.lint import VALUE_CODES

    return [f for f in pred.lint if f.code in VALUE_CODES]


def _load_findings(pred: Any) -> list:
    from core.data.lint import VALUE_CODES

    return [f for f in pred.lint if f.code not in VALUE_CODES]


# ---------------------------------------------------------------------------------------------
# lint


def _run_lint(args: argparse.Namespace) -> str:
    from core.base import records

    if args.engine != "memory":
        from core.stream.analysis import lint_stream

        with _runner(args) as runner:
            result = lint_stream(runner, model=args.model)
        pred, parts = result.input, [(name, part) for name, part, _ in result.results]
    else:
        pred = _load(args)
        parts = _select_models(pred, args.model)
    if args.json:
        return records.dumps(
            {
                **records.command_record("lint", pred, file=args.file, labels=args.labels),
                "lint": pred.lint.to_records(),
                "models": [
                    {"model": name, "n": part.n, "lint": part.lint.to_records()}
                    for name, part in parts
                    if name is not None
                ],
            }
        )
    lines = [_input_line(pred, [part.n for name, part in parts if name is not None])]
    if not pred.models:
        lines.extend(_finding_lines(pred.lint, indent="  ") or ["  no findings"])
        return "\n".join(lines) + "\n"
    lines.extend(_finding_lines(_load_findings(pred), indent="  "))
    for name, part in parts:
        found = _value_findings(part)
        lines.append(f"model {quoted(name)} (n = {part.n:,}):" + ("" if found else " no findings"))
        lines.extend(_finding_lines(found, indent="  "))
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# compare


def _add_compare_arguments(cmd: argparse.ArgumentParser) -> None:
    _add_metrics_arguments(cmd, headline=False)
    cmd.add_argument(
        "--models", metavar="A,B,...", help="models of the model column to compare (default: all)"
    )
    cmd.add_argument(
        "--metrics",
        metavar="KEY,...",
        default=",".join(DEFAULT_METRICS),
        help="metric keys, estimators as name@p (default: %(default)s)",
    )
    cmd.add_argument("--reference", metavar="MODEL", help="default: best by the first metric")
    cmd.add_argument(
        "--test", choices=_Choices(*_TESTS_AT), help="calibration test run on every model"
    )
    _add_test_resamples(cmd)


def _run_compare(args: argparse.Namespace) -> str:
    from core.analyses.model_comparison import compare_models

    if args.model is not None:
        raise _Failure("compare takes several models: use --models A,B instead of --model.")
    metrics = [k.strip() for k in args.metrics.split(",") if k.strip()]
    if args.engine != "memory":
        from core.analyses.model_comparison import ComparisonOptions
        from core.stream.analysis import check_stream_config
        from core.stream.compare import run_comparison

        if args.test is not None:
            raise _Failure(
                f"--test {args.test} runs on every model's rows, which --engine {args.engine} "
                "does not keep: leave out --test, or use --engine memory."
            )
        wanted = None
        if args.models:
            wanted = [m.strip() for m in args.models.split(",") if m.strip()]
        with _runner(args) as runner:
            config = _config(args, _n_classes(runner))
            check_stream_config(config)
            _step(args, f"comparing the models of {args.file}")
            options = ComparisonOptions(tuple(metrics), args.reference)
            result = run_comparison(runner, config, options, models=wanted)
        return _compare_output(args, result.input, config, result.comparison)
    pred = _load(args)
    if pred.model is None:
        raise _Failure(
            f"{pred.source} has no model column; compare needs one (one block of rows per model)."
        )
    parts = pred.by_model()
    if args.models:
        wanted = [m.strip() for m in args.models.split(",") if m.strip()]
        unknown = [m for m in wanted if m not in parts]
        if unknown:
            raise _Failure(
                f"No model(s) {', '.join(map(repr, unknown))}; models: {', '.join(parts)}."
            )
        parts = {m: parts[m] for m in wanted}
    config = _config(args, pred.n_classes)
    _step(args, f"comparing {len(parts)} models, {pred.n:,} rows")
    cmp = compare_models(
        parts,
        config=config,
        metrics=metrics,
        reference=args.reference,
        test=args.test,
        test_options={"n_resamples": args.test_resamples},
    )
    return _compare_output(args, pred, config, cmp)


def _compare_output(args: argparse.Namespace, pred: Any, config: Any, cmp: Any) -> str:
    """Return the JSON record or the text of a comparison (``pred``: its input)."""
    from core.base import records
    from core.stats.intervals import level_words

    if args.json:
        return records.dumps(
            {
                **records.command_record("compare", pred, file=args.file, labels=args.labels),
                "config": config.to_dict(),
                **cmp.to_record(),
            }
        )
    lines = [_input_line(pred, [cmp.n[m] for m in cmp.models]), *cmp.notes, ""]
    table = [("model", *(s.key for s in cmp.metrics))]
    for m in cmp.models:
        row = cmp.table[cmp.table.model == m].set_index("metric")
        cells = []
        for s in cmp.metrics:
            value, low, high = row.loc[s.key, ["value", "low", "high"]]
            interval = "" if _missing(low) else f" [{_fmt(low)}, {_fmt(high)}]"
            cells.append(_fmt(value) + interval)
        table.append((m, *cells))
    lines.extend(_columns(table))
    lines += ["", f"differences to {cmp.reference} ({'paired' if cmp.paired else 'unpaired'}):"]
    level = level_words(cmp.confidence_level, cmp.config.bootstrap_interval)
    diff = [("model", "metric", "difference", f"{level} interval", "")]
    few = set(cmp.few_rows)
    for r in cmp.differences.itertuples(index=False):
        interval = "" if _missing(r.low) else f"[{_fmt(r.low)}, {_fmt(r.high)}]"
        flag = "*" if r.significant else ""
        if flag and few & {r.model, cmp.reference}:
            flag = "* (few rows: not to be trusted)"
        diff.append((r.model, r.metric, _fmt(r.difference), interval, flag))
    lines.extend(_columns(diff))
    if len(cmp.tests):
        lines += ["", f"calibration test {cmp.test}:"]
        lines.extend(
            _columns(
                [("model", "statistic", "p-value")]
                + [(r.model, _fmt(r.statistic), _pfmt(r.pvalue)) for r in cmp.tests.itertuples()]
            )
        )
    lines += ["", f"order flips between metrics: {len(cmp.flips)}"]
    for r in cmp.flips.itertuples(index=False):
        verdict = "significant" if r.significant else "within noise"
        lines.append(
            f"  {r.metric_a} prefers {r.better_by_a}, {r.metric_b} prefers {r.better_by_b} "
            f"({verdict})"
        )
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# report


def _add_report_arguments(cmd: argparse.ArgumentParser) -> None:
    _add_metrics_arguments(cmd)
    cmd.add_argument("--title", metavar="TEXT", help="report title (default: from the file name)")
    cmd.add_argument(
        "--test",
        choices=_Choices(*_TESTS_AT, "none"),
        default=DEFAULT_TEST,
        help="calibration test run on every model (default: %(default)s)",
    )
    _add_test_resamples(cmd)
    cmd.add_argument(
        "--figures",
        metavar="DIR",
        help="also write every figure as PNG and SVG files in DIR (needs kaleido and Chromium)",
    )
    cmd.add_argument(
        "--figure-format",
        choices=("png", "svg", "both"),
        default="both",
        help="image format of --figures (both)",
    )
    cmd.add_argument(
        "--diagram",
        action="append",
        choices=_Choices("core.figures.diagrams", "DIAGRAMS", from_analysis=False),
        default=[],
        metavar="KIND",
        help="another reliability diagram per model, besides the binned one (repeatable): "
        "%(choices)s",
    )
    cmd.add_argument(
        "--by",
        action="append",
        metavar="COLUMN",
        help="a Subgroups section per model by COLUMN (repeatable: intersections); default the "
        "`group` column when there is one",
    )
    _add_min_group_rows(cmd, "groups with fewer rows are shown, not judged")


def _run_report(args: argparse.Namespace) -> str:
    from core.report import build_report

    as_json = args.json or (args.output is not None and Path(args.output).suffix == ".json")
    if args.output is not None and Path(args.output).suffix not in (".html", ".htm", ".json"):
        raise _Failure(f"-o {args.output}: the report is written as .html or .json.")
    if args.output is None and not as_json:
        raise _Failure("the HTML report goes to a file: give -o report.html (or --json).")
    if args.engine != "memory":
        from core.report import build_stream_report

        if args.by:
            raise _Failure("--by reads the rows in memory; leave out --engine.")
        if args.diagram:
            raise _Failure(
                f"--diagram {args.diagram[0]} draws from the rows in memory; "
                "leave out --engine (or use --engine memory)."
            )
        from core.base.errors import CalibscopeError
        from core.stream.analysis import check_stream_config, run_analysis

        comparison, why = None, None
        with _runner(args) as runner:
            config = _config(args, _n_classes(runner))
            check_stream_config(config)
            result = run_analysis(runner, config, model=args.model)
            if len(result.results) >= 2:  # as in memory: the default metrics, no test
                from core.stream.compare import run_comparison

                _step(args, f"comparing the models of {args.file}")
                try:
                    comparison = run_comparison(runner, config).comparison
                except CalibscopeError as exc:
                    why = str(exc)
        report = build_stream_report(
            result,
            config=config,
            title=args.title,
            test=None if args.test == "none" else args.test,
            test_options={"n_resamples": args.test_resamples},
            comparison=comparison,
            comparison_error=why,
        )
        _write_figures(args, report)
        return report.to_json() if as_json else report.to_html()
    pred = _load(args, keep_columns=_kept(args.by or []))
    parts = _select_models(pred, args.model)
    if args.model is not None:
        pred = parts[0][1]
    _step(args, f"building the report, {pred.n:,} rows")
    report = build_report(
        pred,
        config=_config(args, pred.n_classes),
        title=args.title,
        test=None if args.test == "none" else args.test,
        test_options={"n_resamples": args.test_resamples},
        labels_source=args.labels,
        diagrams=tuple(args.diagram),
        by=None if not args.by else tuple(args.by),
        min_group_rows=args.min_group_rows,
        workers=None,  # one process per core (CALIBSCOPE_THREADS), the numbers unchanged
    )
    _write_figures(args, report)
    return report.to_json() if as_json else report.to_html()


def _write_figures(args: argparse.Namespace, report: Any) -> None:
    if not args.figures:
        return
    formats = ("png", "svg") if args.figure_format == "both" else (args.figure_format,)
    _step(args, f"writing the figures to {args.figures}")
    report.write_figures(args.figures, formats)


# ---------------------------------------------------------------------------------------------
# check


def _add_check_arguments(cmd: argparse.ArgumentParser) -> None:
    _add_metrics_arguments(cmd)
    cmd.add_argument(
        "--max-ece",
        "--max-error",
        dest="max_error",
        type=float,
        required=True,
        metavar="X",
        help="largest acceptable upper bound of the estimator's bootstrap interval",
    )
    cmd.add_argument(
        "--test", choices=_Choices(*_TESTS_AT), help="also fail when this calibration test rejects"
    )
    cmd.add_argument("--alpha", type=float, default=0.05, help="level of --test (0.05)")
    _add_test_resamples(cmd)
    _add_min_group_rows(cmd, "groups with fewer rows are skipped")
    cmd.add_argument(
        "--junit",
        metavar="FILE",
        help="also write a JUnit XML report to FILE (- for stdout, with -o FILE)",
    )


def _run_check(args: argparse.Namespace) -> str:
    from core.analyses.gate import check_calibration
    from core.base import records

    if args.engine != "memory":
        raise _Failure("check reads the rows in memory; leave out --engine.")
    pred = _load(args)
    parts = _select_models(pred, args.model)
    if args.model is not None:
        pred = parts[0][1]
    _step(args, f"checking {pred.n:,} rows")
    result = check_calibration(
        pred,
        max_error=args.max_error,
        config=_config(args, pred.n_classes),
        test=args.test,
        alpha=args.alpha,
        test_options={"n_resamples": args.test_resamples},
        min_group_rows=args.min_group_rows,
    )
    if args.junit == "-":
        sys.stdout.write(result.to_junit())
    elif args.junit:
        write_atomically(Path(args.junit), result.to_junit())
    codes = {"pass": EXIT_OK, "fail": EXIT_FAILED, "cannot judge": EXIT_UNJUDGED}
    args.exit_code = codes[result.verdict]
    if args.json:
        return records.dumps(result.to_record())
    lines = [result.summary, f"gated: {result.scopes}"]
    if len(result.rows) > 1:
        lines += [
            f"  {r.status.upper():7} {r.scope} (n = {r.n:,}): {r.reason}" for r in result.rows
        ]
    return "\n".join(lines) + "\n"


#: name -> (help, add_arguments(parser), run(args) -> text)
COMMANDS: dict[
    str,
    tuple[str, Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], str]],
] = {
    "metrics": (
        "Calibration errors and scores with bootstrap intervals (per subgroup: --by; per time "
        "window: --window).",
        _add_metrics_command_arguments,
        _run_metrics,
    ),
    "lint": ("Check a predictions file and list the findings.", _add_input_arguments, _run_lint),
    "compare": (
        "Several models of one file on identical bins: intervals, paired differences, ranks "
        "(--engine stream|dask: the same numbers as --bootstrap cells, from files of any size).",
        _add_compare_arguments,
        _run_compare,
    ),
    "report": (
        "A self-contained HTML report (figures, tables, every parameter) or JSON of every number.",
        _add_report_arguments,
        _run_report,
    ),
    "check": (
        "A calibration gate for CI: exit 0 when the error's upper bound is at most --max-ece "
        "(and --test does not reject) for every scope — all rows, or each model of the model "
        "column, and each value of the group column (groups under --min-group-rows skipped) "
        "—, 1 when a scope fails, 3 when none fails but one cannot be judged (its estimate or "
        "test is undefined on its rows), 2 for bad input or options.",
        _add_check_arguments,
        _run_check,
    ),
}


# ---------------------------------------------------------------------------------------------
# formatting


def _input_line(pred: Any, counts: Sequence[int] = ()) -> str:
    """Return the first line of a text output: the input, and the rows of each model shown.

    ``counts`` are the rows of the models analysed (the same on either engine, with or without
    ``--model``): stacked models' rows add up, so the total alone misleads.
    """
    line = f"{pred.source}: {pred.n:,} rows, "
    line += "one P(y=1) column" if pred.binary else f"{pred.n_classes} classes"
    if not pred.models or not counts:
        return line
    low, high, m = min(counts), max(counts), len(counts)
    each = f"{low:,}" if low == high else f"{low:,}–{high:,}"
    return line + (f"; {m} models of {each} rows each" if m > 1 else f"; 1 model of {each} rows")


def _finding_lines(findings: Any, indent: str) -> list[str]:
    out = []
    for f in findings:
        rows = f" [rows {', '.join(map(str, f.rows))}]" if f.rows else ""
        out.append(f"{indent}{f.severity}: {f.code}: {f.phrased('cli')}{rows}")
    return out


def _interval_text(boot: Any) -> str:
    from core.stats.intervals import level_words

    if boot is None:
        return ""
    ci = boot.confidence_interval
    level = level_words(boot.confidence_level, boot.method)
    return f" [{_fmt(ci.low)}, {_fmt(ci.high)}] ({level}, {boot.n_resamples} resamples)"


def _columns(table: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(str(row[i])) for row in table) for i in range(len(table[0]))]
    return [
        "  " + "  ".join(str(cell).ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in table
    ]


def _missing(x: Any) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def _pfmt(p: Any) -> str:
    from core.base.numbers import format_pvalue

    return "–" if _missing(p) else format_pvalue(p)


def _fmt(x: Any) -> str:
    from core.base.numbers import format_number

    return "–" if _missing(x) else format_number(x)


if __name__ == "__main__":
    raise SystemExit(main())
