"""The report: one self-contained HTML file and JSON of every number of an analysis.

:func:`build_report` runs the analyses through their one path — :func:`core.analyses.analysis.analyze`
per model (reliability diagram, bin table, metrics with bootstrap intervals), one calibration
test per model (:func:`core.analyses.calibration_tests.calibration_test`) and, for a file with two or
more models, :func:`core.analyses.model_comparison.compare_models` on identical bins — and returns a
frozen :class:`Report`.

- :meth:`Report.to_html` is one HTML document that works offline: plotly.js is inlined once,
  the figures are the pure builders of the :mod:`core.figures` package,
  the tables are HTML, and a parameters section lists every option, the seed, the data
  source and digest, ``n``, ``K``, the lint findings and the package versions.
- :meth:`Report.to_json` is the record of ``calibscope metrics --json`` (same keys, same
  numbers) with the test results, the model comparison (the record of
  ``calibscope compare --json``) and the versions of plotly and calibscope added.
- :meth:`Report.write` picks the format from the suffix (``.html``/``.htm`` or ``.json``).

- :meth:`Report.write_figures` writes every figure as PNG and SVG files (Plotly's kaleido ≥ 1
  driving a Chrome or Chromium browser, the optional ``figures`` extra; without them it
  raises :class:`core.base.errors.ExportError` saying what to install). Every figure of the HTML
  report also has the Plotly toolbar's client-side "download as PNG" button.
"""

from __future__ import annotations

import datetime as _dt
import html
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from core.analyses.analysis import AnalysisConfig, ReliabilityAnalysis, analyze, brier_caption
from core.analyses.calibration_tests import (
    TEST_RESAMPLES,
    TESTS,
    CalibrationTestResult,
    calibration_test,
    test_settings,
)
from core.analyses.findings import reliability_finding, statistic_note, test_finding
from core.analyses.model_comparison import prepare_comparison
from core.analyses.subgroups import TEST_FORMULA, subgroup_analysis
from core.base import records
from core.base.errors import CalibscopeError, ConfigError
from core.base.files import write_atomically
from core.base.numbers import format_frame, format_number, format_pvalue, people_table
from core.base.options import DEFAULT_TEST
from core.base.parallel import ProcessJobs, process_count
from core.base.validation import norm_text
from core.data.groups import MIN_GROUP_ROWS
from core.estimators import ESTIMATORS
from core.figures import (
    band_arguments,
    classwise_grid,
    metric_forest_figure,
    plotly_js,
    reliability_figure,
    reliability_overlay_figure,
    subgroup_forest_figure,
    subgroup_reliability_figure,
)
from core.figures.diagrams import DIAGRAMS, diagram_figure, reliability_diagram
from core.figures.export import write_figures
from core.stats.binning import BINNINGS
from core.stats.intervals import BOOTSTRAP_INTERVALS, INTERVAL_METHODS
from core.stats.lenses import LENSES, data_lens

__all__ = ["DEFAULT_TEST", "ModelReport", "Report", "build_report"]


_PLOT_CONFIG = {"displaylogo": False, "toImageButtonOptions": {"format": "png", "scale": 2}}
_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2rem auto;
       max-width: 1100px; padding: 0 1rem; color: #222; line-height: 1.45; }
h1 { margin-bottom: 0.2rem; } h2 { border-bottom: 1px solid #ddd; padding-bottom: 0.2rem;
       margin-top: 2.2rem; }
table { border-collapse: collapse; margin: 0.6rem 0 1.2rem; font-size: 0.88rem; }
th, td { border: 1px solid #ddd; padding: 0.25rem 0.5rem; text-align: left;
         vertical-align: top; }
th { background: #f4f5f7; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
.meta { color: #555; } .headline { font-size: 1.15rem; }
code { background: #f4f5f7; padding: 0 0.2rem; }
"""


@dataclass(frozen=True, eq=False)
class ModelReport:
    """The analysis of one model (or of all rows of a file without a model column).

    Attributes
    ----------
    model : str or None
        Model name; ``None`` for a file without a model column.
    n : int
        Number of rows.
    digest : str
        Exact digest of the model's rows.
    lint : core.data.lint.LintReport
        The data checks of these rows.
    analysis : ReliabilityAnalysis
        :func:`core.analyses.analysis.analyze` under the report's config.
    test : CalibrationTestResult or None
        The calibration test, or None when no test was asked for or it could not run.
    test_error : str or None
        Why the test could not run on these rows.
    diagrams : tuple of (str, object)
        ``(kind, result)`` of every reliability diagram asked for besides the binned one
        (:func:`core.figures.diagrams.reliability_diagram`).
    subgroups : core.analyses.subgroups.SubgroupAnalysis or None
        Calibration per subgroup of the model's rows (see ``build_report(by=...)``).
    subgroups_error : str or None
        Why the subgroups could not be analysed.
    """

    model: str | None
    n: int
    digest: str
    lint: Any
    analysis: ReliabilityAnalysis
    test: CalibrationTestResult | None = None
    test_error: str | None = None
    diagrams: tuple[tuple[str, Any], ...] = ()
    subgroups: Any = None
    subgroups_error: str | None = None


@dataclass(frozen=True, eq=False)
class Report:
    """Everything a report shows (see :func:`build_report`).

    Attributes
    ----------
    title : str
        Report title.
    predictions : core.data.Predictions
        The analysed data (all models).
    config : AnalysisConfig
        The analysis options.
    models : tuple of ModelReport
        One entry per model, in file order (one entry without a model column).
    test_name : str or None
        The calibration test run on every model.
    test_options : dict
        Options of the test (see :func:`core.analyses.calibration_tests.test_settings`).
    comparison : core.analyses.model_comparison.ModelComparison or None
        The models on identical bins (two or more models only).
    labels_source : str or None
        The separate labels file, when there was one.
    created : str
        UTC time of the report (ISO 8601).
    comparison_error : str or None
        Why the models could not be compared (e.g. the canonical lens has no bins).
    """

    title: str
    predictions: Any
    config: AnalysisConfig
    models: tuple[ModelReport, ...]
    test_name: str | None
    test_options: dict[str, Any]
    comparison: Any
    labels_source: str | None
    created: str
    comparison_error: str | None = None

    # ------------------------------------------------------------------ JSON

    def to_record(self) -> dict[str, Any]:
        """Return every number as JSON-ready values (the record of :meth:`to_json`).

        Returns
        -------
        dict
            The ``calibscope metrics --json`` record with ``command = "report"`` plus
            ``title``, ``created``, ``test`` (per model), ``comparison`` (or None) and the
            plotly and calibscope versions.
        """
        pred = self.predictions
        results = [(m.model, m, m.analysis) for m in self.models]
        record = records.metrics_record(
            pred, self.config, results, file=pred.source, labels=self.labels_source
        )
        for out, m in zip(record["results"], self.models, strict=True):
            out["test"] = _test_record(m)
            if m.diagrams:  # kinds asked for besides the binned one
                out["diagrams"] = {kind: result.to_record() for kind, result in m.diagrams}
            if m.subgroups is not None:  # the record of calibscope metrics --by
                out["subgroups"] = m.subgroups.to_record()
            elif m.subgroups_error is not None:
                out["subgroups_error"] = m.subgroups_error
        record.update(
            command="report",
            title=self.title,
            created=self.created,
            versions=versions(),
            test={
                "name": self.test_name,
                "resamples": self.test_options.get("n_resamples", TEST_RESAMPLES),
            },
            comparison=None if self.comparison is None else self.comparison.to_record(),
            comparison_error=self.comparison_error,
        )
        return records.jsonable(record)

    def to_json(self) -> str:
        """Return :meth:`to_record` as indented JSON (non-finite numbers as ``null``).

        Returns
        -------
        str
            The JSON text.
        """
        return json.dumps(self.to_record(), indent=2, allow_nan=False) + "\n"

    # ------------------------------------------------------------------ HTML

    def figures(self) -> list[tuple[str, Any]]:
        """Return the report's figures as ``(caption, plotly Figure)`` pairs, in page order.

        Returns
        -------
        list of tuple
            The reliability diagram of every model, then (with two or more models) the
            overlaid diagrams and the metric forest plot of the comparison.
        """
        out = []
        interval = _interval_label(self.config)
        for m in self.models:
            a = m.analysis
            name = "all rows" if m.model is None else m.model
            if not a.components:
                continue  # the canonical lens has no bins to draw
            if self.config.lens == "classwise":
                fig = classwise_grid(
                    a.components,
                    values=a.headline.component_values,
                    show_band=self.config.consistency_band,
                )
            else:
                comp = a.components[0]
                fig = reliability_figure(comp, interval_label=interval, **band_arguments(comp))
            out.append((f"Reliability diagram — {name}", fig))
        for m in self.models:
            name = "all rows" if m.model is None else m.model
            for kind, result in m.diagrams:
                label = DIAGRAMS.get(kind).label
                out.append((f"{label} reliability diagram — {name}", diagram_figure(kind, result)))
        for m in self.models:
            if m.subgroups is not None:
                name = "all rows" if m.model is None else m.model
                out.append(
                    (f"Reliability per subgroup — {name}", subgroup_reliability_figure(m.subgroups))
                )
                out.append(
                    (
                        f"Calibration error per subgroup — {name}",
                        subgroup_forest_figure(m.subgroups),
                    )
                )
        if self.comparison is not None:
            out.append(
                ("Reliability diagrams on shared bins", reliability_overlay_figure(self.comparison))
            )
            out.append(("Metrics with intervals", metric_forest_figure(self.comparison)))
        return out

    def write_figures(
        self, folder: str | Path, formats: tuple[str, ...] = ("png", "svg")
    ) -> list[Path]:
        """Write every figure of :meth:`figures` as image files named after its caption.

        Parameters
        ----------
        folder : str or Path
            Where to write (created if missing).
        formats : tuple of str
            Some of ``"png"``, ``"svg"``.

        Returns
        -------
        list of Path
            The files written.

        Raises
        ------
        core.base.errors.ExportError
            Without kaleido or a Chrome/Chromium browser (the message says what to install).
        """
        return write_figures(self.figures(), folder, formats)

    def to_html(self) -> str:
        """Return the report as one self-contained HTML document.

        plotly.js is inlined once in the head, so the file opens offline; every figure
        is a ``<div>`` drawn by it.

        Returns
        -------
        str
            The HTML text (about 5 MB, most of it plotly.js).
        """
        figures = {caption: fig for caption, fig in self.figures()}
        pred = self.predictions
        body: list[str] = [f"<h1>{_esc(self.title)}</h1>"]
        kind = "one P(y=1) column" if pred.binary else f"{pred.n_classes} classes"
        body.append(
            f'<p class="meta">{_esc(pred.source)} · n = {pred.n:,} · {kind}'
            + (f" · {len(pred.models)} models" if pred.models else "")
            + f" · created {_esc(self.created)}</p>"
        )
        body.append(
            "<p>Calibration: whether the predicted probabilities match the observed "
            "frequencies. Each point of a reliability diagram is one bin: the mean predicted "
            "score (x) against the share that came true (y); a calibrated model sits on the "
            "diagonal. The headline estimate of the ℓp calibration error is "
            "<code>(Σ_b (n_b/n) |ȳ_b − p̄_b|^p)^(1/p)</code> for the plug-in estimator; "
            "every other metric and the exact options are listed below.</p>"
        )
        for m in self.models:
            body.extend(self._model_html(m, figures))
        if self.comparison is not None:
            body.extend(self._comparison_html(figures))
        elif self.comparison_error is not None:
            body.append("<h2>Model comparison</h2>")
            body.append(f"<p>The models were not compared: {_esc(self.comparison_error)}</p>")
        body.extend(self._parameters_html())
        return (
            '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f"<title>{_esc(self.title)}</title>\n<style>{_STYLE}</style>\n"
            f'<script type="text/javascript">{plotly_js()}</script>\n'
            "</head>\n<body>\n" + "\n".join(body) + "\n</body>\n</html>\n"
        )

    def _model_html(self, m: ModelReport, figures: dict[str, Any]) -> list[str]:
        a = m.analysis
        cfg = self.config
        name = "all rows" if m.model is None else m.model
        head = a.headline
        boot = a.headline_interval
        interval = ""
        if boot is not None:
            ci = boot.confidence_interval
            kind = _bootstrap_kind(a.config)
            interval = f" [{_num(ci.low)}, {_num(ci.high)}] ({boot.confidence_level:.0%} {kind})"
        out = [
            f"<h2>{_esc('Model ' + name if m.model is not None else 'All rows')}</h2>",
            f'<p class="headline">n = {m.n:,}; headline '
            f"<b>{_esc(ESTIMATORS.get(head.estimator).label)}</b> "
            f"({_esc(LENSES.get(cfg.lens).label)} lens, "
            f"{_esc(BINNINGS.get(cfg.binning).label.lower())} bins, B = {cfg.n_bins}, "
            f"{_esc(norm_text(cfg.norm))}) = <b>{_num(head.value)}</b>{_esc(interval)}</p>",
        ]
        out.append(f'<p class="finding">{_esc(reliability_finding(a))}</p>')
        if m.test is not None:
            out.append(f'<p class="finding">{_esc(test_finding(m.test))}</p>')
        caption = f"Reliability diagram — {name}"
        if caption in figures:
            out.append(_figure_html(caption, figures[caption]))
        for kind, result in m.diagrams:
            info = DIAGRAMS.get(kind)
            out.append(f"<h3>{_esc(info.label)} reliability diagram</h3>")
            out.append(f"<p>{_esc(getattr(result, 'summary', '') or info.description)}</p>")
            caption = f"{info.label} reliability diagram — {name}"
            if caption in figures:
                out.append(_figure_html(caption, figures[caption]))
            table = result.table() if hasattr(result, "table") else None
            if table is not None:
                out.append(_table(table))
        out.append("<h3>Metrics</h3>")
        out.append(_table(a.metrics))
        out.append(
            f"<h3>Bins</h3><p>Per-bin {_esc(_interval_label(cfg))} "
            "intervals of the observed frequency.</p>"
        )
        out.append(_table(a.bin_table))
        if a.brier_decomposition is not None:
            out.append(f"<h3>Brier score decomposition</h3><p>{_esc(brier_caption(a))}</p>")
            out.append(_table(a.brier_decomposition.to_frame()))
        if m.test is not None:
            t = m.test
            bound = " (an upper bound)" if t.pvalue_is_bound else ""
            out.append(f"<h3>Calibration test: {_esc(t.label)}</h3>")
            out.append(
                f"<p>Null hypothesis: the predictions are calibrated. Statistic "
                f"{_num(t.statistic)}, p-value {_esc(format_pvalue(t.pvalue))}{bound}; lens {_esc(t.lens)}. "
                f"{_esc(t.method)}. Assumes: {_esc(t.assumptions.rstrip('.'))}."
                + (f" <b>Read with care:</b> {_esc(t.caveat)}" if t.caveat else "")
                + (
                    f" {_esc(note)}"
                    if (note := statistic_note(t, cfg.lens, a.metrics.metric))
                    else ""
                )
                + "</p>"
            )
        elif m.test_error is not None:
            out.append(f"<p>The calibration test did not run: {_esc(m.test_error)}</p>")
        if m.subgroups is not None:
            out.extend(_subgroups_html(m.subgroups, name, figures))
        elif m.subgroups_error is not None:
            out.append("<h3>Subgroups</h3>")
            out.append(f"<p>The subgroups were not analysed: {_esc(m.subgroups_error)}</p>")
        return out

    def _comparison_html(self, figures: dict[str, Any]) -> list[str]:
        cmp = self.comparison
        out = [
            "<h2>Model comparison</h2>",
            f"<p>{len(cmp.models)} models on identical bins; differences to "
            f"<b>{_esc(cmp.reference)}</b> with {'paired' if cmp.paired else 'unpaired'} "
            f"{cmp.confidence_level:.0%} {_bootstrap_kind(cmp.config)} intervals "
            f"({cmp.n_resamples} resamples).</p>",
        ]
        out.extend(f"<p>{_esc(note)}</p>" for note in cmp.notes)
        for caption in ("Reliability diagrams on shared bins", "Metrics with intervals"):
            out.append(_figure_html(caption, figures[caption]))
        out.append("<h3>Metrics per model</h3>")
        out.append(_table(cmp.table))
        out.append(f"<h3>Differences to {_esc(cmp.reference)}</h3>")
        out.append(_table(cmp.differences))
        out.append("<h3>Ranks (1 = best)</h3>")
        labels = {spec.key: spec.label for spec in cmp.metrics}
        out.append(_table(cmp.ranks.rename(columns=labels).reset_index()))
        return out

    def _parameters_html(self) -> list[str]:
        pred = self.predictions
        cfg = self.config.to_dict()
        data = {
            "source": pred.source,
            "labels file": self.labels_source,
            "digest": pred.digest,
            "n": pred.n,
            "K (classes)": pred.n_classes,
            "class names": ", ".join(pred.class_names),
            "input": "one P(y=1) column" if pred.binary else "probability matrix",
            "columns": json.dumps(pred.columns, default=str),
            "models": ", ".join(pred.models) if pred.models else None,
        }
        test = {"test": self.test_name or "none", "test options": json.dumps(self.test_options)}
        findings = pd.DataFrame(pred.lint.to_records(), columns=["severity", "code", "message"])
        return [
            "<h2>Parameters</h2>",
            f"<p>Everything random used the one seed <b>{self.config.seed}</b>; rerun with the "
            "same data, options and versions to get the same numbers.</p>",
            "<h3>Analysis options</h3>",
            _pairs(cfg),
            _pairs(test),
            "<h3>Data</h3>",
            _pairs(data),
            "<h3>Data checks</h3>",
            _table(findings) if len(findings) else "<p>No findings.</p>",
            "<h3>Versions</h3>",
            _pairs(versions()),
        ]

    def write(self, path: str | Path) -> Path:
        """Write the report, as HTML or JSON by the file's suffix.

        Parameters
        ----------
        path : str or pathlib.Path
            Target file ending in ``.html``, ``.htm`` or ``.json``.

        Returns
        -------
        pathlib.Path
            The written path.

        Raises
        ------
        ConfigError
            For another suffix.
        """
        target = Path(path)
        suffix = target.suffix.lower()
        if suffix in (".html", ".htm"):
            text = self.to_html()
        elif suffix == ".json":
            text = self.to_json()
        else:
            raise ConfigError(
                f"Cannot tell the report format from {target.name!r}: end the name in "
                ".html (the report) or .json (every number)."
            )
        # the earlier report stays whole if writing fails midway
        return write_atomically(target, text)


def _subgroups_html(sub: Any, name: str, figures: dict[str, Any]) -> list[str]:
    """Return the Subgroups section of one model: sentences, figures, table and notes."""
    out = [
        f"<h3>Subgroups by {_esc(', '.join(sub.by))}</h3>",
        f"<p><b>{_esc(sub.worst_sentence)}</b></p>",
        f"<p>{_esc(sub.test_sentence)} Test: {_esc(TEST_FORMULA)}; H₀: within each bin the "
        "mean residual y − s is the same in every group.</p>",
    ]
    if sub.small:
        out.append(
            f"<p>Too small to judge (fewer than {sub.min_rows} rows): "
            f"{_esc(', '.join(sub.small))}.</p>"
        )
    for caption in (
        f"Reliability per subgroup — {name}",
        f"Calibration error per subgroup — {name}",
    ):
        if caption in figures:
            out.append(_figure_html(caption, figures[caption]))
    out.append(_table(sub.to_frame()))
    out.extend(f'<p class="meta">{_esc(note)}</p>' for note in sub.notes)
    return out


def versions() -> dict[str, str | None]:
    """Return the versions of Python and of the packages the numbers depend on.

    Returns
    -------
    dict
        ``python, numpy, scipy, pandas, pyarrow, plotly, calibscope`` → version (None when
        a package is not installed).
    """
    return records.versions(plotting=True)


def default_title(source: str, models: list[Any]) -> str:
    """Return a report's default title: its source, or the models when there are several files.

    Several files, one model each, join their names into the source (``a.csv + b.csv + …``),
    which the report's header line keeps in full; the title names the models instead.

    Parameters
    ----------
    source : str
        The predictions' source.
    models : list
        The reported models' names (None for all rows).

    Returns
    -------
    str
        ``"Calibration report: <source>"``, or ``"Calibration report: 14 models (a, b, …, n)"``.
    """
    names = [str(m) for m in models if m is not None]
    if len(names) > 2 and " + " in source:
        shown = names if len(names) <= 4 else [*names[:2], "…", names[-1]]
        return f"Calibration report: {len(names)} models ({', '.join(shown)})"
    return f"Calibration report: {source}"


def _finish_comparison(plan: Any, compared: list[Any]) -> tuple[Any, str | None]:
    """Return the comparison from every model's part, or the error that stopped it."""
    failed = [c for c in compared if isinstance(c, CalibscopeError)]
    try:
        if failed:
            raise failed[0]
        return plan.finish(compared), None
    except CalibscopeError as exc:
        return None, str(exc)


def build_report(
    predictions: Any,
    *,
    config: AnalysisConfig | None = None,
    title: str | None = None,
    test: str | None = DEFAULT_TEST,
    test_options: dict[str, Any] | None = None,
    compare: bool = True,
    seed: int | None = None,
    labels_source: str | None = None,
    diagrams: tuple[str, ...] = (),
    by: Sequence[str] | None = None,
    min_group_rows: int = MIN_GROUP_ROWS,
    workers: int | None = 1,
    progress: Callable[[float, str], Any] | None = None,
) -> Report:
    """Analyse predictions for a report.

    Parameters
    ----------
    predictions : core.data.Predictions
        The data; with a ``model`` column every model is analysed on its own rows.
    config : AnalysisConfig, optional
        The analysis options; default ``AnalysisConfig()`` with the binary lens for one
        P(y=1) column or two classes.
    title : str, optional
        Report title; default :func:`default_title`.
    test : str or None, default=DEFAULT_TEST
        A name in :data:`core.analyses.calibration_tests.TESTS` run on every model (on the test's
        default lens; a test's binning options follow ``config``), or None for no test.
    test_options : dict, optional
        Options of the test (default: 1,000 resamples for a resampling test; see
        :func:`core.analyses.calibration_tests.test_settings`).
    compare : bool, default=True
        With two or more models, also run :func:`core.analyses.model_comparison.compare_models`.
    seed : int, optional
        Overrides ``config.seed``: the one seed of the bootstrap, the test and the
        comparison.
    labels_source : str, optional
        Name of a separate labels file, recorded in the report.
    diagrams : tuple of str, default=()
        Kinds of reliability diagram (names in :data:`core.figures.diagrams.DIAGRAMS`) drawn for
        every model after the binned one (the binned one is always there).
    by : sequence of str, optional
        Grouping columns of a Subgroups section per model
        (:func:`core.analyses.subgroups.subgroup_analysis` with ``config``); default ``("group",)``
        when the data has a ``group`` column, else none; ``()`` for none.
    min_group_rows : int, default=MIN_GROUP_ROWS
        Groups with fewer rows are shown, not judged.
    workers : int or None, default=1
        Processes the models are analysed in, one job per model with its part of the
        comparison (:class:`core.base.parallel.ProcessJobs`; forked, so Linux only); None for
        :func:`core.base.parallel.process_count` of the models; in this process, the models
        share its thread pool. The numbers are those of one process on one thread.
    progress : callable, optional
        ``progress(fraction, message)`` once each model is analysed (a progress bar); what
        it raises stops the models not yet started.

    Returns
    -------
    Report
        The analyses; render with :meth:`Report.to_html` or :meth:`Report.to_json`.

    Raises
    ------
    ConfigError
        For an unknown test, an unknown diagram or invalid options.
    """
    extra = _extra_diagrams(diagrams)
    if config is None:
        config = AnalysisConfig(lens=data_lens(predictions.n_classes))
    if seed is not None:
        config = replace(config, seed=seed)
    if test is not None:
        TESTS.get(test)
    parts = (
        [(None, predictions)] if predictions.model is None else list(predictions.by_model().items())
    )
    if by is None:
        by = ("group",) if predictions.group is not None else ()
    by = (by,) if isinstance(by, str) else tuple(by)

    plan, comparison_error = _comparison_plan(parts, config, compare)

    def model_report(i: int) -> tuple[ModelReport, Any]:
        name, part = parts[i]
        analysis = analyze(part, config)
        result, error = _run_test(part, test, config, test_options)
        drawn = tuple((kind, reliability_diagram(part, config, kind=kind)) for kind in extra)
        sub = sub_error = None
        if by:
            try:
                sub = subgroup_analysis(part, config, by=by, min_rows=min_group_rows)
            except CalibscopeError as exc:
                sub_error = str(exc)
        # the model's part of the comparison, after its analysis: the bootstrap distributions
        # it shares with the analysis (same rows, seed and resamples) come from the memo
        compared: Any = None
        if plan is not None:
            try:
                compared = plan.model_values(plan.models[i])
            except CalibscopeError as exc:
                compared = exc
        report = ModelReport(
            name, part.n, part.digest, part.lint, analysis, result, error, drawn, sub, sub_error
        )
        return report, compared

    # one job per model, in worker processes when there are several (the numbers are those
    # of one process)
    count = process_count(len(parts)) if workers is None else workers

    def tick(i: int) -> None:
        if progress is not None:
            progress((i + 1) / len(parts), f"Analysed model {i + 1:,} of {len(parts):,}")

    with ProcessJobs(model_report, len(parts), count) as jobs:
        done = jobs.results(tick)
    models = [m for m, _ in done]
    comparison = None
    if plan is not None:
        comparison, comparison_error = _finish_comparison(plan, [c for _, c in done])
    created = _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat()
    return Report(
        title=title or default_title(predictions.source, [m.model for m in models]),
        predictions=predictions,
        config=config,
        models=tuple(models),
        test_name=test,
        test_options=dict(test_options or {}),
        comparison=comparison,
        labels_source=labels_source,
        created=created,
        comparison_error=comparison_error,
    )


def build_stream_report(
    result: Any,
    *,
    config: AnalysisConfig,
    title: str | None = None,
    test: str | None = DEFAULT_TEST,
    test_options: dict[str, Any] | None = None,
    comparison: Any = None,
    comparison_error: str | None = None,
) -> Report:
    """Build the report of a streamed analysis (:func:`core.stream.analysis.analyze_stream`).

    The analyses are those of the stream; the calibration test of each model runs on the
    seeded subsample its kernel estimators ran on (its method says so), and the models'
    comparison is the streamed one (:func:`core.stream.compare.run_comparison`), when given.

    Parameters
    ----------
    result : core.stream.analysis.StreamAnalysis
        The streamed analysis.
    config : AnalysisConfig
        Its options.
    title, test, test_options
        As for :func:`build_report`.
    comparison : ModelComparison, optional
        The streamed comparison of the models (two or more).
    comparison_error : str, optional
        Why the models were not compared, when they were not.

    Returns
    -------
    Report
        Render with :meth:`Report.to_html` or :meth:`Report.to_json`.
    """
    if test is not None:
        TESTS.get(test)
    models = []
    for name, part, analysis in result.results:
        sample = result.samples.get(name)
        found: CalibrationTestResult | None = None
        error = None
        if test is not None and sample is None:
            error = "no rows kept for a test (kernel_sample=0)"
        elif test is not None:
            rows = _Rows(*sample)
            found, error = _run_test(rows, test, config, test_options)
            m = rows.labels.shape[0]
            if found is not None and m < part.n:
                where = f"; on a seeded subsample of {m:,} of the {part.n:,} rows"
                found = replace(found, method=found.method + where)
        models.append(ModelReport(name, part.n, part.digest, part.lint, analysis, found, error))
    created = _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat()
    return Report(
        title=title or default_title(result.input.source, [m.model for m in models]),
        predictions=result.input,
        config=config,
        models=tuple(models),
        test_name=test,
        test_options=dict(test_options or {}),
        comparison=comparison,
        labels_source=None,
        created=created,
        comparison_error=None if comparison is not None else comparison_error,
    )


def _comparison_plan(parts: list, config: AnalysisConfig, compare: bool) -> tuple[Any, str | None]:
    """Return the plan of comparing two or more models (or why not), else ``(None, None)``."""
    if not (compare and len(parts) >= 2):
        return None, None

    try:
        return prepare_comparison(dict(parts), config=config), None
    except CalibscopeError as exc:
        return None, str(exc)


def _extra_diagrams(kinds: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """Validate diagram kinds; the binned one is always drawn, so it is dropped here."""
    out: list[str] = []
    for kind in kinds:
        if not DIAGRAMS.get(kind).from_analysis and kind not in out:
            out.append(kind)
    return tuple(out)


@dataclass(frozen=True)
class _Rows:
    probs: np.ndarray
    labels: np.ndarray


def _run_test(
    part: Any, test: str | None, config: AnalysisConfig, options: dict[str, Any] | None
) -> tuple[CalibrationTestResult | None, str | None]:
    if test is None:
        return None, None
    lens, opts = test_settings(test, config, options)
    try:
        result = calibration_test(
            part.probs, part.labels, test=test, lens=lens, seed=config.seed, **opts
        )
        return result, None
    except CalibscopeError as exc:
        if isinstance(exc, ConfigError):
            raise
        return None, str(exc)


def _test_record(m: ModelReport) -> dict[str, Any] | None:
    if m.test is None:
        return None if m.test_error is None else {"error": m.test_error}
    return m.test.to_record()


def _bootstrap_kind(config: AnalysisConfig) -> str:

    word = BOOTSTRAP_INTERVALS.get(config.bootstrap_interval).word
    return f"{word} bootstrap" if word else "bootstrap"


def _interval_label(config: AnalysisConfig) -> str:

    return f"{config.confidence_level:.0%} {INTERVAL_METHODS.get(config.interval_method).label}"


def _figure_html(caption: str, fig: Any) -> str:
    div = fig.to_html(full_html=False, include_plotlyjs=False, config=_PLOT_CONFIG)
    return f"<figure>{div}<figcaption>{_esc(caption)}</figcaption></figure>"


def _esc(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _num(x: Any) -> str:

    return _esc(format_number(x))


def _table(frame: pd.DataFrame) -> str:
    """Render a DataFrame as an HTML table (numbers right-aligned, as the app writes them)."""
    frame = people_table(frame)
    formats = format_frame(frame)
    numeric = {c for c in frame.columns if pd.api.types.is_numeric_dtype(frame[c].dtype)}
    head = "".join(f"<th>{_esc(c)}</th>" for c in frame.columns)
    rows = []
    for values in frame.itertuples(index=False, name=None):
        cells = []
        for name, v in zip(frame.columns, values, strict=True):
            text = _esc(formats[name](v.item() if hasattr(v, "item") else v))
            cls = ' class="num"' if name in numeric else ""
            cells.append(f"<td{cls}>{text}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _pairs(values: dict[str, Any]) -> str:
    rows = "".join(
        f"<tr><th>{_esc(k)}</th><td>{'–' if v is None else _esc(v)}</td></tr>"
        for k, v in values.items()
    )
    return f"<table><tbody>{rows}</tbody></table>"
