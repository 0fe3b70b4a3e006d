"""The ``calibscope`` command line: the dashboard's analyses for batch jobs and CI.

``calibscope metrics FILE`` loads predictions (CSV or Parquet, with ``--labels``
for a separate labels file), runs :func:`core.analysis.analyze` and prints the
calibration errors and scores with bootstrap intervals, as a table or as JSON
(``--json``: every number, the config, the seed, the lint findings and the
versions). ``calibscope lint FILE`` prints the data checks only. ``calibscope compare
FILE`` compares the models of a file's ``model`` column on identical bins
(:func:`core.model_comparison.compare_models`). ``calibscope report FILE -o report.html``
writes the self-contained HTML report (``-o report.json`` or ``--json``: every number) of
:func:`core.report.build_report`.

Bad input gives one line on stderr (``calibscope: error: ...``) and exit code 2.
Choices of ``--lens``, ``--binning`` and ``--estimator`` come from the registries.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn

from core import records
from core.errors import CalibscopeError

PROG = "calibscope"
#: Where rows are read: loaded in memory, streamed in batches, or on Dask partitions.
ENGINES = ("memory", "stream", "dask")

EXIT_OK = 0
EXIT_ERROR = 2


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line and exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_ERROR, f"{PROG}: error: {message} (see {self.prog} --help)\n")


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
        ``0`` on success, ``2`` on bad input or options (with one line on stderr).
    """
    parser = build_parser()
    try:
        args = parser.parse_args(None if argv is None else list(argv))
    except SystemExit as stop:  # --help, --version or a parse error (already printed)
        return int(stop.code or 0) if not isinstance(stop.code, str) else EXIT_ERROR
    if not getattr(args, "run", None):
        parser.print_help(sys.stderr)
        return EXIT_ERROR
    try:
        text = args.run(args)
        if args.output:
            write_atomically(Path(args.output), text)
        else:
            sys.stdout.write(text)
    except (CalibscopeError, _Failure, OSError, ValueError) as exc:
        # ValueError covers parser errors of third-party readers on malformed files
        message = " ".join(str(exc).split()) or type(exc).__name__
        print(f"{PROG}: error: {message}", file=sys.stderr)
        return EXIT_ERROR
    return EXIT_OK


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder.

    An interrupted run leaves the old file (or none), never a half-written one.
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


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
    sub = parser.add_subparsers(title="commands", metavar="COMMAND", parser_class=_Parser)
    for name, (help_text, add_arguments, run) in COMMANDS.items():
        cmd = sub.add_parser(name, help=help_text, description=help_text)
        add_arguments(cmd)
        cmd.set_defaults(run=run)
    return parser


# ---------------------------------------------------------------------------------------------
# shared options


def _add_input_arguments(cmd: argparse.ArgumentParser) -> None:
    cmd.add_argument("file", metavar="FILE", help="predictions: CSV or Parquet")
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
    cmd.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")
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
        type=int,
        default=1_000_000,
        metavar="N",
        help="rows per batch of the stream engine (memory grows with it)",
    )
    cmd.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="Dask scheduler, e.g. tcp://host:8786 (default: a local cluster)",
    )


def _load_options(args: argparse.Namespace) -> Any:
    from core.stream.load import LoadOptions

    if args.labels:
        raise _Failure(
            f"--engine {args.engine} reads the labels from a column of the same files; "
            "--labels (a separate labels file) needs --engine memory."
        )
    prob_columns = None
    if args.prob_columns:
        prob_columns = tuple(c.strip() for c in args.prob_columns.split(",") if c.strip())
    label_column: str | int | None = args.label_column
    if label_column is not None and label_column.lstrip("-").isdigit():
        label_column = int(label_column)
    return LoadOptions(
        prob_columns=prob_columns,
        label_column=label_column,
        positive_class=args.positive_class,
        logits={"auto": "auto", "yes": True, "no": False}[args.logits],
        renormalize=args.renormalize,
        drop_missing=args.drop_missing,
    )


@contextlib.contextmanager
def _runner(args: argparse.Namespace) -> Iterator[Any]:
    """Yield the stream or Dask runner of ``--engine`` (a Dask client open meanwhile)."""
    load = _load_options(args)
    if args.engine == "stream":
        from core.stream.engine import StreamRunner

        if args.batch_rows < 1:
            raise _Failure(f"--batch-rows must be at least 1; got {args.batch_rows}.")
        yield StreamRunner(args.file, load, batch_rows=args.batch_rows)
        return
    from core.stream.dask import DaskRunner, dask_client

    with dask_client(args.scheduler) as client:
        yield DaskRunner(args.file, load, client=client)


def _n_classes(runner: Any) -> int:
    return len(runner.plan().class_names)


def _load(args: argparse.Namespace) -> Any:
    from core.data import load_predictions

    prob_columns = None
    if args.prob_columns:
        prob_columns = [c.strip() for c in args.prob_columns.split(",") if c.strip()]
    label_column: str | int | None = args.label_column
    if label_column is not None and label_column.lstrip("-").isdigit():
        label_column = int(label_column)
    pred = load_predictions(
        args.file,
        labels=args.labels,
        prob_columns=prob_columns,
        label_column=label_column,
        positive_class=args.positive_class,
        logits={"auto": "auto", "yes": True, "no": False}[args.logits],
        renormalize=args.renormalize,
        drop_missing=args.drop_missing,
    )
    return pred


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
    from core.binning import BINNINGS
    from core.estimators import ESTIMATORS
    from core.intervals import INTERVAL_METHODS
    from core.lenses import LENSES

    _add_input_arguments(cmd)
    cmd.add_argument(
        "--lens",
        choices=LENSES.names(),
        help="binary for one P(y=1) column or two classes, else top-label (default)",
    )
    cmd.add_argument("--binning", choices=BINNINGS.names(), default="equal-width")
    cmd.add_argument("--bins", type=int, default=15, metavar="N", help="number of bins (15)")
    cmd.add_argument("--norm", choices=("1", "2", "inf"), default="1", help="ℓp norm (1 = ECE)")
    if headline:
        cmd.add_argument(
            "--estimator", choices=ESTIMATORS.names(), default="plugin", help="headline estimator"
        )
    cmd.add_argument("--tie-policy", choices=("split", "keep"), default="split")
    cmd.add_argument("--seed", type=int, default=0, help="the one seed (0)")
    cmd.add_argument(
        "--resamples", type=int, default=1000, metavar="R", help="bootstrap resamples (0 = none)"
    )
    cmd.add_argument(
        "--confidence-level",
        "--level",
        dest="confidence_level",
        type=float,
        default=0.95,
        help="confidence level of the intervals (0.95)",
    )
    if headline:
        cmd.add_argument(
            "--interval-method", choices=INTERVAL_METHODS.names(), default="wilson", help="per bin"
        )


def _config(args: argparse.Namespace, n_classes: int) -> Any:
    from core.analysis import AnalysisConfig

    lens = args.lens or ("binary" if n_classes == 2 else "top-label")
    return AnalysisConfig(
        lens=lens,
        binning=args.binning,
        n_bins=args.bins,
        norm=args.norm,
        estimator=getattr(args, "estimator", "plugin"),
        tie_policy=args.tie_policy,
        seed=args.seed,
        n_resamples=args.resamples,
        confidence_level=args.confidence_level,
        interval_method=getattr(args, "interval_method", "wilson"),
    )


def _run_metrics(args: argparse.Namespace) -> str:
    from core.analysis import analyze

    if args.engine != "memory":
        from core.stream.analysis import check_stream_config, run_analysis

        with _runner(args) as runner:
            config = _config(args, _n_classes(runner))
            check_stream_config(config)
            result = run_analysis(runner, config, model=args.model)
        source, results = result.input, list(result.results)
        if args.json:
            return records.dumps(
                records.metrics_record(source, config, results, file=args.file, labels=None)
            )
        return _metrics_text(source, config, results)
    pred = _load(args)
    config = _config(args, pred.n_classes)
    results = []
    for name, part in _select_models(pred, args.model):
        analysis = analyze(part, config)
        results.append((name, part, analysis))
    if args.json:
        return records.dumps(
            records.metrics_record(pred, config, results, file=args.file, labels=args.labels)
        )
    return _metrics_text(pred, config, results)


def _metrics_text(pred: Any, config: Any, results: list) -> str:
    lines = [_input_line(pred)]
    cfg = config.to_dict()
    lines.append(
        "config: "
        + ", ".join(
            f"{k}={cfg[k]}"
            for k in ("lens", "binning", "n_bins", "norm", "estimator", "tie_policy", "seed")
        )
        + f", n_resamples={config.n_resamples}, confidence_level={config.confidence_level:g}"
    )
    interval_title = f"{config.confidence_level:.0%} interval"
    for name, part, analysis in results:
        lines.append("")
        title = f"model {name!r}" if name is not None else "all rows"
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
        if name is not None:
            lines.extend(_finding_lines(_value_findings(part), indent="  "))
    shown = pred.lint.findings if not pred.models else _load_findings(pred)
    if shown:
        lines.append("")
        lines.append("data checks:")
        lines.extend(_finding_lines(shown, indent="  "))
    return "\n".join(lines) + "\n"


def _value_findings(pred: Any) -> list:
    from core.data.lint import VALUE_CODES

    return [f for f in pred.lint if f.code in VALUE_CODES]


def _load_findings(pred: Any) -> list:
    from core.data.lint import VALUE_CODES

    return [f for f in pred.lint if f.code not in VALUE_CODES]


# ---------------------------------------------------------------------------------------------
# lint


def _run_lint(args: argparse.Namespace) -> str:
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
    lines = [_input_line(pred)]
    if not pred.models:
        lines.extend(_finding_lines(pred.lint, indent="  ") or ["  no findings"])
        return "\n".join(lines) + "\n"
    lines.extend(_finding_lines(_load_findings(pred), indent="  "))
    for name, part in parts:
        found = _value_findings(part)
        lines.append(f"model {name!r} (n = {part.n:,}):" + ("" if found else " no findings"))
        lines.extend(_finding_lines(found, indent="  "))
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# compare


def _add_compare_arguments(cmd: argparse.ArgumentParser) -> None:
    from core.calibration_tests import TESTS
    from core.model_comparison import DEFAULT_METRICS

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
    cmd.add_argument("--test", choices=TESTS.names(), help="calibration test run on every model")
    cmd.add_argument(
        "--test-resamples", type=int, default=1000, metavar="R", help="resampling tests (1000)"
    )


def _run_compare(args: argparse.Namespace) -> str:
    from core.model_comparison import compare_models

    if args.engine != "memory":
        raise _Failure(
            f"compare --engine {args.engine} is not available: the paired comparison resamples "
            f"rows. Use metrics --engine {args.engine} for every model's numbers, or compare a "
            "sample in memory."
        )
    pred = _load(args)
    if args.model is not None:
        raise _Failure("compare takes several models: use --models A,B instead of --model.")
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
    cmp = compare_models(
        parts,
        config=config,
        metrics=[k.strip() for k in args.metrics.split(",") if k.strip()],
        reference=args.reference,
        test=args.test,
        test_options={"n_resamples": args.test_resamples},
    )
    if args.json:
        return records.dumps(
            {
                **records.command_record("compare", pred, file=args.file, labels=args.labels),
                "config": config.to_dict(),
                **cmp.to_record(),
            }
        )
    lines = [_input_line(pred), *cmp.notes, ""]
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
    diff = [("model", "metric", "difference", f"{cmp.confidence_level:.0%} interval", "")]
    for r in cmp.differences.itertuples(index=False):
        interval = "" if _missing(r.low) else f"[{_fmt(r.low)}, {_fmt(r.high)}]"
        diff.append((r.model, r.metric, _fmt(r.difference), interval, "*" if r.significant else ""))
    lines.extend(_columns(diff))
    if len(cmp.tests):
        lines += ["", f"calibration test {cmp.test}:"]
        lines.extend(
            _columns(
                [("model", "statistic", "p-value")]
                + [(r.model, _fmt(r.statistic), _fmt(r.pvalue)) for r in cmp.tests.itertuples()]
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
    from core.calibration_tests import TESTS
    from core.report import DEFAULT_TEST

    _add_metrics_arguments(cmd)
    cmd.add_argument("--title", metavar="TEXT", help="report title (default: from the file name)")
    cmd.add_argument(
        "--test",
        choices=(*TESTS.names(), "none"),
        default=DEFAULT_TEST,
        help="calibration test run on every model (default: %(default)s)",
    )
    cmd.add_argument(
        "--test-resamples", type=int, default=1000, metavar="R", help="resampling tests (1000)"
    )


def _run_report(args: argparse.Namespace) -> str:
    from core.report import build_report

    as_json = args.json or (args.output is not None and Path(args.output).suffix == ".json")
    if args.output is not None and Path(args.output).suffix not in (".html", ".htm", ".json"):
        raise _Failure(f"-o {args.output}: the report is written as .html or .json.")
    if args.output is None and not as_json:
        raise _Failure("the HTML report goes to a file: give -o report.html (or --json).")
    if args.engine != "memory":
        from core.report import build_stream_report
        from core.stream.analysis import check_stream_config, run_analysis

        with _runner(args) as runner:
            config = _config(args, _n_classes(runner))
            check_stream_config(config)
            result = run_analysis(runner, config, model=args.model)
        report = build_stream_report(
            result,
            config=config,
            title=args.title,
            test=None if args.test == "none" else args.test,
            test_options={"n_resamples": args.test_resamples},
        )
        return report.to_json() if as_json else report.to_html()
    pred = _load(args)
    parts = _select_models(pred, args.model)
    if args.model is not None:
        pred = parts[0][1]
    report = build_report(
        pred,
        config=_config(args, pred.n_classes),
        title=args.title,
        test=None if args.test == "none" else args.test,
        test_options={"n_resamples": args.test_resamples},
        labels_source=args.labels,
    )
    return report.to_json() if as_json else report.to_html()


#: name -> (help, add_arguments(parser), run(args) -> text)
COMMANDS: dict[
    str,
    tuple[str, Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], str]],
] = {
    "metrics": (
        "Calibration errors and scores with bootstrap intervals.",
        _add_metrics_arguments,
        _run_metrics,
    ),
    "lint": ("Check a predictions file and list the findings.", _add_input_arguments, _run_lint),
    "compare": (
        "Several models of one file on identical bins: intervals, paired differences, ranks.",
        _add_compare_arguments,
        _run_compare,
    ),
    "report": (
        "A self-contained HTML report (figures, tables, every parameter) or JSON of every number.",
        _add_report_arguments,
        _run_report,
    ),
}


# ---------------------------------------------------------------------------------------------
# formatting


def _input_line(pred: Any) -> str:
    kind = "one P(y=1) column" if pred.binary else f"{pred.n_classes} classes"
    models = f", {len(pred.models)} models" if pred.models else ""
    return f"{pred.source}: {pred.n:,} rows, {kind}{models}"


def _finding_lines(findings: Any, indent: str) -> list[str]:
    out = []
    for f in findings:
        rows = f" [rows {', '.join(map(str, f.rows))}]" if f.rows else ""
        out.append(f"{indent}{f.severity}: {f.code}: {f.message}{rows}")
    return out


def _interval_text(boot: Any) -> str:
    if boot is None:
        return ""
    ci = boot.confidence_interval
    return f" [{_fmt(ci.low)}, {_fmt(ci.high)}] ({boot.confidence_level:.0%}, {boot.n_resamples} resamples)"


def _columns(table: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(str(row[i])) for row in table) for i in range(len(table[0]))]
    return [
        "  " + "  ".join(str(cell).ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in table
    ]


def _missing(x: Any) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def _fmt(x: Any) -> str:
    if _missing(x):
        return "–"
    return f"{float(x):.4f}" if abs(float(x)) >= 1e-3 or float(x) == 0 else f"{float(x):.3e}"


if __name__ == "__main__":
    raise SystemExit(main())
