"""User strings stay data: digests, cache keys, CSV cells, figure text and dashboard Markdown.

Model names, class names, file names and the report title come from whoever made the file
or the link. None of them may turn into a link, an image, a formula, a restyled figure or
another session's cached result.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from core.data import load_predictions

pytest.importorskip("streamlit")


def _frame(n: int = 60, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.05, 0.95, n)
    return pd.DataFrame({"p": p.round(6), "label": (rng.uniform(size=n) < p).astype(int)})


# ----------------------------------------------------------------------------- cache keys


def test_cache_keys_tell_equal_rows_of_different_files_apart():
    from dashboard import cache

    raw = _frame().to_csv(index=False).encode()
    a = load_predictions(raw, name="a.csv")
    b = load_predictions(raw, name="b.csv")
    assert a.digest == b.digest  # the same rows
    # ... but a cached result (a report's title, a model's source) names its file
    assert cache.data_key(a) != cache.data_key(b)
    assert cache.data_key(a) == cache.data_key(load_predictions(raw, name="a.csv"))


# ----------------------------------------------------------------------------- CSV cells


def test_safe_csv_neutralizes_formula_cells_and_keeps_numbers():
    import csv
    import io

    from core.base.export import safe_csv

    frame = pd.DataFrame(
        {
            "model": ['=HYPERLINK("https://evil.example","x")', "+1+1", "-2+3", "@SUM(A1:A2)"],
            "note": ["\tTAB", "\rCR", "ok\r=1+1", None],
            "gap": [-0.25, 0.5, -1.0, 2.0],  # numbers stay numbers, negative ones too
            "n": [-3, 1, 2, 3],
            "=cmd|' /C calc'!A0": ["a", "b", "c", "d"],  # a header from a user's column
        }
    )
    frame["kind"] = pd.Categorical(["=a", "b", "=a", "b"])
    text = safe_csv(frame)
    rows = list(csv.reader(io.StringIO(text, newline="")))
    assert rows[0] == ["model", "note", "gap", "n", "'=cmd|' /C calc'!A0", "kind"]
    body = {name: [r[i] for r in rows[1:]] for i, name in enumerate(rows[0])}
    assert body["model"] == ["'" + v for v in frame.model]
    assert len(rows) == 1 + len(frame)  # a line break inside a cell is quoted, not a new row
    assert body["note"] == ["'\tTAB", "'\rCR", "ok\r=1+1", ""]
    assert body["gap"] == ["-0.25", "0.5", "-1.0", "2.0"]
    assert body["n"] == ["-3", "1", "2", "3"]
    assert body["kind"] == ["'=a", "b", "'=a", "b"]
    for cells in body.values():
        assert not any(c.startswith(("=", "+", "@", "\t", "\r")) for c in cells)
    # the frame itself is left alone
    assert frame.model.iloc[0].startswith("=")
    with_index = safe_csv(frame.set_index("model")[["gap"]], index=True)
    assert with_index.splitlines()[1].startswith("\"'=HYPERLINK")


def test_every_csv_download_goes_through_safe_csv():
    # a DataFrame written with to_csv skips the neutralization: only core.base.export may call it
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    offenders = [
        str(p.relative_to(root))
        for p in [*root.joinpath("dashboard").rglob("*.py"), *root.joinpath("core").rglob("*.py")]
        if p.name != "export.py" and re.search(r"\.to_csv\(", p.read_text(encoding="utf-8"))
    ]
    assert offenders == []
    pages = root / "dashboard" / "app_pages"
    # the pages' own CSV buttons and the one every table has beside it (dashboard.widgets)
    files = [*pages.glob("*.py"), root / "dashboard" / "widgets.py"]
    # a CSV download names its file ``….csv`` (widgets.download reads the type off the name)
    csv_files = [p for p in files if re.search(r'\.csv"', p.read_text(encoding="utf-8"))]
    assert len(csv_files) >= 4
    for page in csv_files:
        assert "safe_csv(" in page.read_text(encoding="utf-8"), page.name


# ----------------------------------------------------------------------------- figure text

#: Names a file can carry: a link, a restyling span, an image, a hover-template field.
LINK = '<a href="https://evil.example/verify">Verify your account</a>'
SPAN = '<span style="font-size:90px;color:red">BIG</span>'
IMAGE = "<img src=https://evil.example/pixel.png onerror=alert(1)>"
TEMPLATE = "%{meta} &lt;b&gt;"
MODELS = (LINK, SPAN, IMAGE)
CLASSES = (SPAN, LINK, TEMPLATE)
#: What no figure text may hold: a tag or a template field that came from a name.
ACTIVE = ("<a", "<span", "<img", "%{meta}", "</a")


def _multi_model(n: int = 240):
    from core.data import as_predictions, combine_models

    rng = np.random.default_rng(5)
    parts = {}
    for i, name in enumerate(MODELS):
        p = rng.dirichlet(np.ones(3) * (0.6 + i), size=n)
        y = np.array([rng.choice(3, p=row) for row in p])
        parts[name] = as_predictions((p, y), class_names=CLASSES)
    return combine_models(parts)


def _strings(value, out):
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for v in value.values():
            _strings(v, out)
    elif isinstance(value, list | tuple):
        for v in value:
            _strings(v, out)
    elif isinstance(value, np.ndarray) and value.dtype == object:
        for v in value.ravel():
            _strings(v, out)
    return out


def _active_text(fig) -> list[str]:
    """Strings of a figure in which Plotly would find a tag or template from a name."""
    return [s for s in _strings(fig.to_plotly_json(), []) if any(a in s.lower() for a in ACTIVE)]


@pytest.fixture(scope="module")
def every_figure():
    """Every public figure builder of core.figures, drawn from results with hostile names."""
    import core.figures as figures
    from core.analyses.analysis import AnalysisConfig, analyze
    from core.analyses.calibration_tests import CalibrationTestResult, TestErrorSimulation
    from core.analyses.corp_diagram import corp_diagram
    from core.analyses.estimator_comparison import compare_estimators, error_versus_bins
    from core.analyses.gallery import run_entry
    from core.analyses.model_comparison import compare_models
    from core.analyses.validity import validity_curves
    from core.bias import estimate_histogram
    from core.figures.diagrams import reliability_diagram
    from core.recalibration.evaluation import compare_recalibrators, reliability_bins
    from core.stats.binning import bin_stats
    from core.stats.guarantees import guarantee_calculator
    from core.stats.summary import summarize
    from core.worlds import BetaScores, beta_fit_histogram, fit_beta

    pred = _multi_model()
    parts = pred.by_model()
    one = parts[LINK]
    classwise = AnalysisConfig(lens="classwise", n_resamples=0, consistency_band=True)
    top = AnalysisConfig(n_resamples=0)
    grid = analyze(one, classwise)
    comp = analyze(one, top).components[0]
    summary = summarize(one)
    cmp = compare_models(parts, config=AnalysisConfig(lens="classwise", n_bins=5), n_resamples=20)
    est = compare_estimators(one, AnalysisConfig(lens="classwise", n_bins=5), intervals="none")
    curve = error_versus_bins(one, AnalysisConfig(lens="classwise"), n_bins_range=(2, 6))
    rng = np.random.default_rng(0)
    s = BetaScores(2.0, 5.0).sample(500, rng)
    fit_hist = beta_fit_histogram(s, fit_beta(s), n_bins=10)
    bins = bin_stats(s, (rng.uniform(size=500) < s).astype(float), n_bins=8)
    n_values = [100, 200, 400]
    bias_table = pd.DataFrame(
        {
            "estimator": [m for m in MODELS for _ in n_values],
            "name": "plugin",
            "binning": "equal-width",
            "n": n_values * len(MODELS),
            "bias": 0.01,
            "sd": 0.02,
            "rmse": 0.03,
            "mean": 0.05,
            "se": 0.001,
        }
    )
    heat = pd.DataFrame({"row": [5, 5, "sweep", "sweep"], "n": [100, 200] * 2, "bias": 0.01})
    family = pd.DataFrame({"tce": [0.0, 0.05], "q05": [0.0, 0.03], "q95": [0.02, 0.08]})
    family["mean"] = [0.01, 0.05]
    power = pd.DataFrame({"target": [0.02, 0.02], "n": [100, 200], "power": [0.3, 0.6]})
    null = CalibrationTestResult(
        test="consistency", statistic=0.3, pvalue=0.4, pvalue_is_bound=False,
        method="resampling", assumptions="none", lens="top-label", n=100,
        null_distribution=np.array([0.1, 0.2, 0.4]), n_resamples=3,
    )  # fmt: skip
    sim = TestErrorSimulation(
        {"spiegelhalter": np.array([0.01, 0.5])}, np.array([0.05, 1.0]), True, 50, 2
    )
    from core.analyses.subgroups import subgroup_analysis, window_analysis
    from core.data import load_predictions

    grouped = load_predictions(
        pd.DataFrame(
            {
                "p": s,
                "y": (rng.uniform(size=500) < s).astype(int),
                "group": [MODELS[i % 3] for i in range(500)],
            }
        )
    )
    binary = AnalysisConfig(lens="binary", n_resamples=20)
    sub = subgroup_analysis(grouped, binary, min_rows=200)
    win = window_analysis(grouped, binary, every=100, threshold=0.05)
    p = one.probs
    recal = compare_recalibrators(
        p, one.labels, ["temperature", "meta-cal"], n_resamples=5, estimators=("plugin",)
    )
    hostile = {k: f"{MODELS[i % 3]} {k}" for i, k in enumerate(recal.labels_of)}
    metrics = recal.metrics.assign(method_label=recal.metrics.method.map(hostile))
    view = next(iter(recal.selective.values()))
    validity = validity_curves(one, lens="top-label", n_bins=5, n_cal=0.5, n_resamples=3, seed=1)
    built = {
        "analysis_figure": figures.analysis_figure(grid, interval_label=SPAN),
        "classwise_grid": figures.classwise_grid(grid.components, show_band=True),
        "reliability_figure": figures.reliability_figure(
            comp, name=LINK, interval_label=SPAN, title=IMAGE
        ),
        "class_balance": figures.class_balance(summary),
        "confidence_histogram": figures.confidence_histogram(summary),
        "reliability_overlay_figure": figures.reliability_overlay_figure(cmp, component=1),
        "metric_forest_figure": figures.metric_forest_figure(cmp),
        "paired_difference_figure": figures.paired_difference_figure(cmp),
        "rank_heatmap_figure": figures.rank_heatmap_figure(cmp),
        "estimator_intervals_figure": figures.estimator_intervals_figure(
            est.table.assign(label=SPAN)
        ),
        "sweep_trace_figure": figures.sweep_trace_figure(est.sweep_traces),
        "error_versus_bins_figure": figures.error_versus_bins_figure(
            curve.assign(label=LINK), est.sweep_choices, norm_label=SPAN
        ),
        "null_distribution_figure": figures.null_distribution_figure(null),
        "error_rate_figure": figures.error_rate_figure(sim),
        "bias_curve_figure": figures.bias_curve_figure(bias_table, title=LINK),
        "bias_heatmap_figure": figures.bias_heatmap_figure(heat, title=SPAN),
        "estimate_distribution_figure": figures.estimate_distribution_figure(
            estimate_histogram({LINK: [0.0, 0.01, 0.02]}),
            reference=0.01,
            reference_label=SPAN,
            observed=0.02,
            title=IMAGE,
        ),  # fmt: skip
        "ece_vs_tce_figure": figures.ece_vs_tce_figure({LINK: family}, title=SPAN),
        "power_figure": figures.power_figure({SPAN: power}, title=LINK),
        "beta_fit_figure": figures.beta_fit_figure(fit_hist, title=IMAGE),
        "fitted_curve_figure": figures.fitted_curve_figure(bins, {LINK: lambda c: c}),
        "before_after_reliability": figures.before_after_reliability(
            reliability_bins(recal), hostile, lens_label=SPAN
        ),
        "tradeoff_figure": figures.tradeoff_figure(
            metrics, x_metric="plugin", x_label=LINK, y_label=SPAN
        ),
        "score_separation_figure": figures.score_separation_figure(view),
        "selective_threshold_figure": figures.selective_threshold_figure(view, alpha=0.1),
        "coverage_accuracy_figure": figures.coverage_accuracy_figure(recal.selective, hostile),
        "validity_figure": figures.validity_figure(validity),
        "bin_validity_figure": figures.bin_validity_figure(validity),
        "epsilon_versus_n_figure": figures.epsilon_versus_n_figure(guarantee_calculator(1000, 10)),
        "corp_figure": figures.corp_figure(corp_diagram(one, classwise), title=LINK),
        "subgroup_reliability_figure": figures.subgroup_reliability_figure(sub),
        "subgroup_forest_figure": figures.subgroup_forest_figure(sub),
        "window_figure": figures.window_figure(win),
        "smooth_diagram_figure": figures.smooth_diagram_figure(
            reliability_diagram(one, AnalysisConfig(lens="classwise", n_resamples=5), kind="smooth")
        ),
        # the gallery draws no user strings: its entries are the papers' own settings
        "gallery_figure": figures.gallery_figure(run_entry("gupta-ramdas-fig2")),
    }
    return built


def test_every_figure_builder_is_checked(every_figure):
    import core.figures as figures

    helpers = {"band_arguments", "log_counts", "model_color", "plotly_js"}
    assert set(every_figure) == set(figures.__all__) - helpers


@pytest.mark.parametrize(
    "name",
    [
        "analysis_figure", "classwise_grid", "reliability_figure", "class_balance",
        "reliability_overlay_figure", "metric_forest_figure", "paired_difference_figure",
        "rank_heatmap_figure", "estimator_intervals_figure", "sweep_trace_figure",
        "error_versus_bins_figure", "bias_curve_figure", "bias_heatmap_figure",
        "estimate_distribution_figure", "ece_vs_tce_figure", "power_figure", "beta_fit_figure",
        "fitted_curve_figure", "before_after_reliability", "tradeoff_figure",
        "coverage_accuracy_figure", "subgroup_reliability_figure", "subgroup_forest_figure",
        "smooth_diagram_figure",
    ],
)  # fmt: skip
def test_names_in_figures_are_text_not_markup(every_figure, name):
    fig = every_figure[name]
    found = _strings(fig.to_plotly_json(), [])
    # the hostile names are in the figure, drawn as text ...
    assert any("evil.example" in s or "font-size:90px" in s for s in found), name
    # ... but nowhere as a tag or a template field Plotly would act on
    assert _active_text(fig) == [], name


def test_figures_without_names_hold_no_markup(every_figure):
    for name, fig in every_figure.items():
        assert _active_text(fig) == [], name


def test_html_report_shows_hostile_names_and_title_as_text():
    from core.analyses.analysis import AnalysisConfig
    from core.report import build_report

    pred = _multi_model(n=150)
    report = build_report(
        pred, config=AnalysisConfig(lens="classwise", n_resamples=20), title=LINK, test=None
    )
    for caption, fig in report.figures():
        assert _active_text(fig) == [], caption
    html = report.to_html()
    lowered = html.lower()
    # (a hover-template field is plain text in HTML: only the figures above read them)
    for tag in ('<a href="https://evil', "<span style=", "<img src=https://evil"):
        assert tag not in lowered
    assert "&lt;a href=&quot;https://evil.example/verify&quot;&gt;" in html  # the title, as text


# ----------------------------------------------------------------------------- dashboard Markdown

#: Hostile strings of the dashboard walk: an image (fetched by every viewer), a link, a bare
#: URL (autolinked), a colour directive, a formula, HTML. None may render as what it says.
MD_MODELS = (
    "![px](https://evil.example/pixel.png)",
    "[Verify your account](https://evil.example/verify)",
    "https://evil.example/auto :red[big] $x^2$ <b>bold</b>",
)
MD_CLASSES = ("![k0](https://evil.example/k0.png)", "[k1](https://evil.example/k1)", "k2 $x^2$")
MD_FILE = "[file](https://evil.example/file) __x__.csv"
MD_TITLE = "![title](https://evil.example/title.png) **Urgent**"
#: What must never stand unescaped in Markdown: each payload contains the domain, so an
#: unescaped link, image or autolink shows it raw (escaped, its dot reads ``evil\.example``).
MD_RAW = ("evil.example", ":red[", "$x^2$", "**Urgent**", "__x__")
#: Elements whose text Streamlit shows as plain text (tables, figures, code).
MD_PLAIN = {"Dataframe", "ArrowTable", "PlotlyChart", "Text", "Code", "Json", "DownloadButton"}
MD_FIELDS = {"body", "label", "help"}
PAGES = (
    "app_pages/data.py",
    "app_pages/reliability.py",
    "app_pages/estimators.py",
    "app_pages/tests.py",
    "app_pages/bias.py",
    "app_pages/recalibration.py",
    "app_pages/validity.py",
    "app_pages/compare.py",
    "app_pages/report.py",
)


def _md_csv(n: int = 120, seed: int = 11) -> bytes:
    rng = np.random.default_rng(seed)
    frames = []
    for i, model in enumerate(MD_MODELS):
        probs = rng.dirichlet(np.ones(3) * (0.8 + i), size=n)
        frame = pd.DataFrame(probs, columns=list(MD_CLASSES))
        frame["label"] = [MD_CLASSES[rng.choice(3, p=row)] for row in probs]
        frame["model"] = model
        frames.append(frame)
    return pd.concat(frames).to_csv(index=False, float_format="%.10f").encode()


def _nodes(node):
    yield node
    children = getattr(node, "children", None)
    if isinstance(children, dict):
        for child in children.values():
            yield from _nodes(child)


def _markdown_texts(at) -> list[str]:
    """Every string of the app that Streamlit renders as Markdown (bodies, labels, tooltips)."""
    from google.protobuf.json_format import MessageToDict

    def fields(value, out):
        if isinstance(value, dict):
            for key, v in value.items():
                if key in MD_FIELDS and isinstance(v, str):
                    out.append(v)
                else:
                    fields(v, out)
        elif isinstance(value, list):
            for v in value:
                fields(v, out)
        return out

    texts: list[str] = []
    for node in _nodes(at._tree):
        proto = getattr(node, "proto", None)
        if proto is None or type(proto).__name__ in MD_PLAIN:
            continue
        texts += fields(MessageToDict(proto, preserving_proto_field_name=True), [])
    return texts


#: GitHub's autolink literals, as found in the parsed text (escapes undone): a URL or
#: ``www.`` after the start, a space or punctuation, or an e-mail address.
_AUTOLINK = re.compile(r"(?:^|(?<=[^\w\u2060]))(?:https?://|www\.)|[-.\w+]@[-\w]+\.", re.I)
_UNESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")


def _check_markdown(at, where: str) -> list[str]:
    """Assert no hostile string stands unescaped in Markdown; return the texts that hold one."""
    from dashboard.text import plain

    assert not at.exception, (where, [e.message for e in at.exception])
    texts = _markdown_texts(at)
    unescaped = [t for t in texts if any(raw in t for raw in MD_RAW)]
    assert unescaped == [], where
    # Markdown links a bare address in the text it parsed, escaped or not (our own texts
    # link papers: only the hostile strings are looked at)
    linked = [t for t in texts if "evil" in t and _AUTOLINK.search(_UNESCAPE.sub(r"\1", t))]
    assert linked == [], where
    shown = [t for t in texts if "evil\\.example" in t]
    # the names did reach the page (at least the sidebar's data badge names the file) ...
    assert shown, where
    # ... and read there exactly as they are
    assert any(MD_FILE in plain(t) for t in shown), where
    return shown


def test_every_page_shows_hostile_names_and_title_literally():
    from streamlit.testing.v1 import AppTest

    from dashboard.text import plain

    root = __import__("pathlib").Path(__file__).resolve().parents[1]
    at = AppTest.from_file(str(root / "dashboard" / "app.py"), default_timeout=180)
    at.query_params["report_title"] = MD_TITLE
    at.query_params["n_resamples"] = "20"
    at.run()
    at.file_uploader(key="upload").set_value((MD_FILE, _md_csv(), "text/csv"))
    at.run()
    shown = _check_markdown(at, "data")
    assert any(MD_MODELS[0] in plain(t) for t in shown)  # the data page lists the models
    for page in PAGES:
        at.switch_page(page).run()
        shown = _check_markdown(at, page)
        if page.endswith("bias.py"):
            at.radio(key="bias_source").set_value("subsample")
            at.multiselect(key="bias_ns").set_value([100])
            at.number_input(key="bias_replicates").set_value(10)
            at.button(key="FormSubmitter:bias_form-Run simulation").click().run()
            shown = _check_markdown(at, "bias, subsampled")
            assert sum(MD_FILE in plain(t) for t in shown) >= 2  # badge and the source line
        elif page.endswith("recalibration.py"):
            at.button(key="FormSubmitter:recal_form-Fit and compare").click().run()
            _check_markdown(at, "recalibration, fitted")
            assert any(s.value == "Comparison on held-out rows" for s in at.subheader)
        elif page.endswith("report.py"):
            assert any(MD_TITLE in plain(t) for t in shown)
            # every model is in the report's summary table, as it is
            summary = next(d.value for d in at.dataframe if "model" in d.value.columns)
            assert set(MD_MODELS) <= set(summary["model"])
    # the classwise lens names the classes
    at.selectbox(key="lens").set_value("classwise")
    for page in PAGES:
        at.switch_page(page).run()
        _check_markdown(at, f"{page}, classwise")
    # a refused upload names its file in the error, and what is still shown
    at.switch_page("app_pages/data.py").run()
    at.file_uploader(key="upload").set_value(
        ("![x](https://evil.example/x).csv", b"\x00\xff", "text/csv")
    )
    at.run()
    _check_markdown(at, "refused upload")
    assert "![x](https://evil.example/x).csv was not loaded" in plain(at.error[0].value)
