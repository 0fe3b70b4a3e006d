"""Widgets and page sections of the dashboard (no calculation: values in, core results out).

The sidebar controls are shared by every page. Each analysis control has ``key=`` equal to its :class:`core.analyses.analysis.AnalysisConfig` field
and ``bind="query-params"``, so a copied URL restores the settings. Options come from the
registries (``core.stats.lenses.LENSES``, ``core.stats.binning.BINNINGS``, ``core.estimators.ESTIMATORS``).
Numbers bound to the URL are drawn with :func:`number_input` and :func:`slider`, which
refuse a malformed value in the link with a warning. User strings put into Markdown go
through :func:`literal`.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any

import streamlit as st

from core.analyses.analysis import CONSISTENCY_BAND_MAX_BINS, analyze, bootstrap_mode
from core.analyses.calibration_tests import TESTS
from core.base.errors import CalibscopeError
from core.base.export import safe_csv
from core.base.numbers import COLUMN_LABELS, format_frame, format_interval, format_number
from core.base.options import N_BINS, N_RESAMPLES
from core.estimators import ESTIMATORS
from core.figures import log_counts
from core.figures.diagrams import DIAGRAMS
from core.figures.export import FORMATS, export_problem, figure_bytes
from core.recalibration import RECALIBRATORS
from core.stats.binning import BINNINGS, TIE_POLICIES
from core.stats.conventions import CONVENTIONS
from core.stats.guarantees import (
    DEFAULT_ALPHA,
    DEFAULT_EPSILON,
    guarantee_epsilon,
    largest_bins,
)
from core.stats.intervals import (
    BOOTSTRAP_INTERVALS,
    INTERVAL_METHODS,
    level_words,
    with_outside_note,
)
from core.stats.lenses import LENSES, lens_components
from core.worlds import GLM_NAMES, glm_world_name, world_choices, world_named
from dashboard import cache, calls, errors, links, state
from dashboard.text import literal  # also the pages' way to escape user strings

UPLOAD_TYPES = ("csv", "parquet", "pq", "txt")
SEVERITY_ICONS = {"error": "🛑 error", "warning": "⚠️ warning", "info": "ℹ️ info"}
NORM_CHOICES = ("1", "2", "inf")
NORM_LABELS = {"1": "ℓ1 (ECE)", "2": "ℓ2 (RMS CE)", "inf": "ℓ∞ (max CE)"}
NORM_SYMBOLS = {"1": "ℓ1", "2": "ℓ2", "inf": "ℓ∞"}
TIE_LABELS = {
    "split": "split ties at rank boundaries",
    "keep": "keep equal scores together",
}


#: Plotly's mode bar without its logo; a figure downloads as a PNG at twice its screen size.
CHART_CONFIG = {"displaylogo": False, "toImageButtonOptions": {"format": "png", "scale": 2}}


def chart(fig: Any, key: str, *, container: Any = None, filename: str | None = None) -> None:
    """Draw a figure of :mod:`core.figures` in its own template (not Streamlit's theme).

    Parameters
    ----------
    fig : plotly.graph_objects.Figure
        The figure.
    key : str
        Widget key.
    container : streamlit container, optional
        Where to draw it (a column); default the page.
    filename : str, optional
        Name of the downloaded PNG.
    """
    name = filename or key
    download = {**CHART_CONFIG["toImageButtonOptions"], "filename": name}
    config = {**CHART_CONFIG, "toImageButtonOptions": download}
    where = container or st
    where.plotly_chart(fig, theme=None, key=key, config=config)
    figure_downloads(where, fig, name, key)


def table(
    data: Any,
    *,
    key: str,
    container: Any = None,
    signed: tuple[str, ...] = (),
    csv: Any = None,
    **kwargs: Any,
) -> None:
    """Draw a table with ``st.dataframe`` and a CSV download of it beside.

    Cells are shown as :func:`core.base.numbers.format_frame` writes them (significant digits,
    no floating noise, p-values as ``< 1e-16``, a blank for a missing value), while sorting
    reads the numbers. The CSV is :func:`core.base.export.safe_csv` of the table (a styled table's data): full
    precision, and every text cell or header that a spreadsheet would run as a formula
    (``=``, ``+``, ``-``, ``@`` ...) neutralised. Streamlit's own export, which writes cells
    as they are, is turned off (``client.disableDataExport`` in ``.streamlit/config.toml``).

    Parameters
    ----------
    data : DataFrame, Styler or list of dicts
        The table.
    key : str
        Widget key; the file is ``<key>.csv``.
    container : streamlit container, optional
        Where to draw it; default the page.
    signed : tuple of str, optional
        Columns of differences, shown with ``+`` before a positive value.
    csv : DataFrame, optional
        What the CSV holds when it is not the table shown (e.g. every column, in the units
        of the API rather than the percentages shown).
    **kwargs
        Passed to ``st.dataframe`` (``hide_index``, ``column_config``, ...).
    """
    where = container or st
    # a missing value (an empty bin's mean, a test that does not apply) is a blank cell,
    # not Streamlit's default "None"
    kwargs.setdefault("placeholder", "")
    where.dataframe(_for_people(data, signed), key=key, **kwargs)
    where.download_button(
        "CSV",
        data=functools.partial(
            _table_csv,
            data if csv is None else csv,
            bool(not kwargs.get("hide_index", False)),
        ),
        file_name=f"{key}.csv",
        mime="text/csv",
        key=f"{key}_csv",
        on_click="ignore",
        icon=":material/download:",
        type="tertiary",
        help="Download this table as CSV (full precision; names that a spreadsheet would "
        "run as formulas are neutralised).",
    )


def _for_people(data: Any, signed: tuple[str, ...] = ()) -> Any:
    """A table's cells as people read them (:mod:`core.base.numbers`), the values kept for sorting."""
    import pandas as pd

    frame = pd.DataFrame(data) if isinstance(data, list) else data
    if (
        not isinstance(frame, pd.DataFrame)  # a Styler keeps its own formats
        or frame.columns.has_duplicates
        or not frame.index.is_unique
        or len(frame) > 50_000  # Styler sends every cell's text: large tables as they are
    ):
        return data
    return frame.style.format(format_frame(frame, signed=signed))


def _table_csv(data: Any, index: bool) -> bytes:
    import pandas as pd

    frame = getattr(data, "data", data)  # a Styler's table
    if not isinstance(frame, pd.DataFrame):
        frame = pd.DataFrame(frame)
    return safe_csv(frame, index=index).encode("utf-8")


def figure_downloads(container: Any, fig: Any, name: str, key: str) -> None:
    """PNG and SVG downloads of a figure (drawn by kaleido when clicked), or why there are none."""

    problem = export_problem()
    with container.popover("Download figure", icon=":material/download:"):
        if problem is not None:
            st.caption(problem)
            return
        for fmt in FORMATS:
            st.download_button(
                fmt.upper(),
                data=functools.partial(figure_bytes, fig, fmt),
                file_name=f"{name}.{fmt}",
                mime="image/png" if fmt == "png" else "image/svg+xml",
                key=f"{key}_{fmt}",
                on_click="ignore",
            )


def number_input(
    container: Any,
    label: str,
    min_value: float | None = None,
    max_value: float | None = None,
    value: float | None = None,
    *,
    key: str,
    step: float | None = None,
    **kwargs: Any,
) -> Any:
    """``container.number_input`` bound to the URL, refusing a malformed value in the link.

    A value in the link that is not a finite number within the bounds (a whole number for
    an integer input, as Streamlit makes one when value, bounds and step are all ints)
    falls back to ``value`` with a warning naming the parameter
    (:func:`dashboard.links.check_url_value`).

    Parameters
    ----------
    container : streamlit container
        Where to draw it (``st``, a column, ``st.sidebar``).
    label, min_value, max_value, value, step
        As for ``st.number_input``.
    key : str
        Widget key and URL parameter.
    **kwargs
        Further ``st.number_input`` arguments (``help``, ``format``, ...).

    Returns
    -------
    int or float
        The widget's value.
    """
    numbers = (min_value, max_value, value, step)
    integer = all(v is None or (isinstance(v, int) and not isinstance(v, bool)) for v in numbers)
    valid, expected = links.number_checker(min_value, max_value, integer=integer)
    links.check_url_value(
        container, key, label=label, default=value, valid=valid, expected=expected
    )
    return container.number_input(
        label, min_value, max_value, value, step=step, key=key, bind="query-params", **kwargs
    )


def slider(
    container: Any,
    label: str,
    min_value: float,
    max_value: float,
    value: float,
    step: float | None = None,
    *,
    key: str,
    **kwargs: Any,
) -> Any:
    """``container.slider`` of one number bound to the URL, refusing a malformed link value.

    Parameters
    ----------
    container : streamlit container
        Where to draw it.
    label, min_value, max_value, value, step
        As for ``st.slider``.
    key : str
        Widget key and URL parameter.
    **kwargs
        Further ``st.slider`` arguments.

    Returns
    -------
    int or float
        The slider's value.
    """
    integer = all(isinstance(v, int) for v in (min_value, max_value, value, step or 1))
    valid, expected = links.number_checker(min_value, max_value, integer=integer)
    links.check_url_value(
        container, key, label=label, default=value, valid=valid, expected=expected
    )
    return container.slider(
        label, min_value, max_value, value, step, key=key, bind="query-params", **kwargs
    )


def range_slider(
    container: Any,
    label: str,
    min_value: int,
    max_value: int,
    value: tuple[int, int],
    *,
    key: str,
    **kwargs: Any,
) -> tuple[int, int]:
    """``container.slider`` of a range of whole numbers bound to the URL (``key=a&key=b``).

    A link value that is not two whole numbers ``a ≤ b`` within the bounds is refused with a
    note beside the slider, which then starts at ``value``.
    """
    valid_one, words = links.number_checker(min_value, max_value, integer=True)
    raw = st.query_params.get_all(key)
    if raw and key not in st.session_state:
        good = len(raw) == 2 and all(valid_one(r) for r in raw)
        if not good or float(raw[0]) > float(raw[1]):
            links.drop_url_param(key)
            shown = ", ".join(raw)[:60]
            links.note_url_value(
                key,
                f"The link sets {key} = “{shown}”, which is not two numbers a ≤ b, each "
                f"{words.removeprefix('a ')}; {label} uses its default, {value[0]}–{value[1]}, "
                "instead.",
                tuple(value),
            )
    links.show_url_note(container, key)
    return container.slider(
        label, min_value, max_value, value, key=key, bind="query-params", **kwargs
    )


def check_url_choice(
    container: Any, key: str, label: str, options: list[str], default: str
) -> None:
    """Refuse, with a warning, a value in the link that is none of a select box's options."""
    allowed = set(options)
    links.check_url_value(
        container,
        key,
        label=label,
        default=default,
        valid=allowed.__contains__,
        expected="one of " + ", ".join(options),
    )


# ---------------------------------------------------------------- choices kept in the URL by code

#: Kinds of single-choice control :func:`choice` draws.
CHOICE_KINDS = ("selectbox", "radio", "segmented_control", "select_slider")


def url_code(option: Any) -> str:
    """Return how an option is written in the URL: its registry name or number, as text."""
    return str(option)


def _url_lookup(
    options: list[Any], format_func: Any, aliases: dict[str, Any] | None = None
) -> dict[str, Any]:
    # codes first; a label is accepted too (links written when controls wrote labels), and
    # the labels older links carry
    lookup = {url_code(o): o for o in options}
    for o in options:
        lookup.setdefault(str(format_func(o)), o)
    for text, o in (aliases or {}).items():
        if o in options:
            lookup.setdefault(text, o)
    return lookup


def _expected(options: list[Any]) -> str:
    codes = [url_code(o) for o in options]
    shown = ", ".join(codes[:12]) + (", …" if len(codes) > 12 else "")
    return f"one of {shown}"


def _write_url(key: str, value: str | list[str] | None) -> None:
    """Set (or, for None, remove) a URL parameter kept by hand, only when it changes."""
    if value is None:
        if key in st.query_params:
            del st.query_params[key]
        return
    current = st.query_params.get_all(key) if isinstance(value, list) else st.query_params.get(key)
    if current != value:
        st.query_params[key] = value


def choice(
    container: Any,
    label: str,
    options: Any,
    *,
    key: str,
    default: Any = None,
    format_func: Any = None,
    kind: str = "selectbox",
    url_aliases: dict[str, Any] | None = None,
    **kwargs: Any,
) -> Any:
    """One choice among ``options``, shown by label, kept in the URL by code.

    Streamlit's URL binding writes what the control shows (the label of ``format_func``)
    into the link; here the link holds :func:`url_code` of the option (a registry name), the
    control shows ``format_func`` of it, and the value survives page changes. A link value
    is read when the control is first drawn in the session: a code (or a label, as older
    links have) selects its option; anything else is refused with a note beside the control
    (:func:`dashboard.links.check_url_value`). The URL names the choice while it differs
    from ``default``.

    Parameters
    ----------
    container : streamlit container
        Where to draw it (``st``, a column, ``st.sidebar``).
    label : str
        The control's label.
    options : sequence
        The options (registry names, numbers).
    key : str
        Widget key and URL parameter.
    default : object, optional
        The option chosen without a link value (default the first).
    format_func : callable, optional
        An option's label (default ``str``).
    kind : str, default "selectbox"
        One of :data:`CHOICE_KINDS`.
    url_aliases : dict, optional
        Further link values read as an option (the labels older links carry).
    **kwargs
        Further arguments of the Streamlit control (``help``, ``horizontal``, ...).

    Returns
    -------
    object
        The chosen option.
    """
    options = list(options)
    fmt = format_func or str
    if not options:
        return container.selectbox(label, options, key=key, **kwargs)
    if default not in options:
        default = options[0]
    lookup = _url_lookup(options, fmt, url_aliases)
    links.check_url_value(
        container,
        key,
        label=label,
        default=default,
        valid=lookup.__contains__,
        expected=_expected(options),
        default_label=str(fmt(default)),
    )
    if key not in st.session_state:
        raw = st.query_params.get(key)
        st.session_state[key] = lookup.get(raw, default) if raw is not None else default
    elif st.session_state[key] not in options:
        st.session_state[key] = default  # options changed with the data: back to the default
    draw = getattr(container, kind)
    common = {"format_func": fmt, "key": key, "persist_state": "session", **kwargs}
    if kind == "segmented_control":
        value = draw(label, options, selection_mode="single", required=True, **common)
    elif kind == "select_slider":
        value = draw(label, options=options, **common)
    else:
        value = draw(label, options, **common)
    if value not in options:
        value = default
    _write_url(key, None if value == default else url_code(value))
    return value


def choices(
    container: Any,
    label: str,
    options: Any,
    *,
    key: str,
    default: Any = (),
    format_func: Any = None,
    url_aliases: dict[str, Any] | None = None,
    **kwargs: Any,
) -> list[Any]:
    """Several choices among ``options`` (a multiselect), shown by label, kept by code.

    As :func:`choice`; the URL repeats the parameter once per chosen option (``key=`` alone
    for none), and link values that are no option are left out with a note.

    Returns
    -------
    list
        The chosen options.
    """
    options = list(options)
    fmt = format_func or str
    default = [o for o in default if o in options]
    lookup = _url_lookup(options, fmt, url_aliases)
    if key not in st.session_state:
        raw = [r for r in st.query_params.get_all(key) if r != ""]
        if key in st.query_params:
            picked = [lookup[r] for r in raw if r in lookup]
            picked = list(dict.fromkeys(picked))
            bad = [r for r in raw if r not in lookup]
            if bad:
                shown = ", ".join(f"“{r if len(r) <= 40 else r[:40] + '…'}”" for r in bad)
                links.note_url_value(
                    key,
                    f"The link sets {key} = {shown}, which is not {_expected(options)}; "
                    f"{label} leaves it out.",
                    picked,
                )
        else:
            picked = default
        st.session_state[key] = picked
    else:
        kept = [o for o in st.session_state[key] if o in options]
        if kept != list(st.session_state[key]):
            st.session_state[key] = kept  # options changed with the data
    links.show_url_note(container, key)
    value = container.multiselect(
        label, options, format_func=fmt, key=key, persist_state="session", **kwargs
    )
    value = [o for o in value if o in options]
    _write_url(key, None if value == default else ([url_code(o) for o in value] or [""]))
    return value


def toggle(container: Any, label: str, *, key: str, value: bool = False, **kwargs: Any) -> bool:
    """``container.toggle`` bound to the URL, refusing a link value other than true/false."""
    links.check_url_value(
        container,
        key,
        label=label,
        default=value,
        valid=lambda raw: raw.lower() in ("true", "false"),
        expected="true or false",
        default_label="on" if value else "off",
    )
    return container.toggle(label, value=value, key=key, bind="query-params", **kwargs)


def registry_label(registry_name: str, name: Any) -> str:
    """Return the label of ``name`` in a registry (``"lens"``, ``"binning"``, ``"estimator"``).

    Names that the registry does not hold (an estimator at a norm, a blank) are returned as
    they are.
    """

    registry = {"lens": LENSES, "binning": BINNINGS, "estimator": ESTIMATORS}[registry_name]
    if isinstance(name, str) and name in registry.names():
        return registry.get(name).label
    return name


def with_labels(frame: Any, columns: tuple[str, ...] = ("lens", "binning", "estimator")) -> Any:
    """Return a copy of a table whose registry-name columns show the registries' labels."""
    out = frame.copy()
    for column in columns:
        if column in out.columns:
            out[column] = [registry_label(column, v) for v in out[column]]
    return out


def _norm_choice(norm: float) -> str:
    return "inf" if math.isinf(norm) else str(int(norm))


def _index(options: list[Any], value: Any) -> int:
    return options.index(value) if value in options else 0


def _labels(registry: Any) -> dict[str, str]:
    return {entry.name: entry.label for entry in registry}


def _choices_help(labels: dict[str, str], intro: str = "") -> str:
    # the control shows the labels (the URL keeps the registry names); the help lists them
    lines = "\n".join(f"- {label}" for label in labels.values())
    return f"{intro}\n\n{lines}" if intro else lines


def test_picker(container: Any, *, key: str, default: str) -> str:
    """Select box of a calibration test run on every model ("" for none), bound to the URL.

    Parameters
    ----------
    container : streamlit container
        Where to draw it (a column).
    key : str
        Widget key and URL parameter.
    default : str
        Registry name of the test chosen by default.

    Returns
    -------
    str
        The chosen test name, or "" for none.
    """

    tests = ["", *TESTS.names()]
    return choice(
        container,
        "Calibration test",
        tests,
        key=key,
        default=default,
        format_func=lambda t: TESTS.get(t).label if t else "none",
        help="Run on every model: the p-value of “this model is calibrated”.",
    )


def tie_policies() -> list[str]:
    """Return the tie policies of equal-mass binning."""

    return list(TIE_POLICIES)


def interval_methods() -> list[str]:
    """Return the per-bin interval methods."""

    return INTERVAL_METHODS.names()


def interval_label(method: str) -> str:
    """Return the display label of a per-bin interval method."""

    return INTERVAL_METHODS.get(method).label


def interval_words(confidence_level: float, method: str) -> str:
    """Return how captions name the bootstrap intervals, e.g. "95% percentile-bootstrap intervals".

    Examples
    --------
    >>> interval_words(0.9, "basic")
    '90% basic (pivotal) bootstrap intervals'
    """

    return f"{confidence_level:.0%} {BOOTSTRAP_INTERVALS.get(method).caption} intervals"


def model_picker() -> None:
    """Show the model picker when the loaded file holds several models."""
    state.check_model(st)
    names = state.model_names()
    if not names:
        return
    check_url_choice(st, state.MODEL, "Model", [state.ALL_MODELS, *names], names[0])
    st.selectbox(
        "Model",
        [state.ALL_MODELS, *names],
        index=1,
        key=state.MODEL,
        bind="query-params",
        help="The file has a `model` column; the analysis runs on the rows of the chosen model.",
    )


def analysis_controls() -> None:
    """Render the shared analysis options in the sidebar."""

    d = state.config_defaults()
    state.apply_pending_lens()
    _config_select(
        "Lens",
        "lens",
        [e.name for e in LENSES if not e.kernel_only],
        d["lens"],
        _labels(LENSES),
        "How a prediction becomes a score to calibrate (the canonical lens is for the "
        "kernel estimators of the Tests page).",
    )
    _config_select(
        "Binning",
        "binning",
        BINNINGS.names(),
        d["binning"],
        _labels(BINNINGS),
        "Equal-width bins [k/B, (k+1)/B) (last bin closed); equal-mass bins by rank; "
        "or one bin per distinct score.",
    )
    _config_select(
        "Ties (equal-mass)",
        "tie_policy",
        tie_policies(),
        d["tie_policy"],
        TIE_LABELS,
        "Equal-mass bins hold ranks ⌈k·n/B⌉ … ⌈(k+1)·n/B⌉−1 (ties split at rank "
        "boundaries); keeping equal scores together moves boundaries so equal scores share "
        "a bin (fewer bins may result).",
    )
    number_input(
        st,
        "Number of bins",
        min_value=N_BINS.minimum,
        max_value=N_BINS.maximum,
        value=int(d["n_bins"]),
        step=1,
        key="n_bins",
    )
    bins_suggestion()
    _config_select(
        "Bins as in",
        "convention",
        CONVENTIONS.names(),
        d["convention"],
        _labels(CONVENTIONS),
        "Calibscope's bins, or a library's (edges, closed side, clipping, float32, the "
        "extra bin for 1.0) so the value equals what that library reports on this data.",
    )
    _config_select(
        "Norm",
        "norm",
        list(NORM_CHOICES),
        _norm_choice(d["norm"]),
        NORM_LABELS,
        "The p of the ℓp calibration error.",
    )
    _config_select(
        "Estimator",
        "estimator",
        ESTIMATORS.names(),
        d["estimator"],
        _labels(ESTIMATORS),
        "The headline calibration-error estimator; the metrics table shows all of them.",
    )
    with st.expander("Uncertainty and seed", expanded=True):
        number_input(
            st,
            "Seed",
            min_value=0,
            max_value=2**32 - 1,
            value=int(d["seed"]),
            step=1,
            key="seed",
            help="One seed for everything random (bootstrap, random tie breaks).",
        )
        number_input(
            st,
            "Bootstrap resamples",
            min_value=N_RESAMPLES.minimum,
            max_value=N_RESAMPLES.maximum,
            value=int(d["n_resamples"]),
            step=100,
            key="n_resamples",
            help="Bootstrap resamples per metric; 0 turns intervals off.",
        )
        slider(
            st,
            "Interval level",
            min_value=0.50,
            max_value=0.99,
            value=float(d["confidence_level"]),
            step=0.01,
            key="confidence_level",
        )

        _config_select(
            "Bootstrap interval",
            "bootstrap_interval",
            BOOTSTRAP_INTERVALS.names(),
            d["bootstrap_interval"],
            {m: BOOTSTRAP_INTERVALS.get(m).label for m in BOOTSTRAP_INTERVALS.names()},
            "How each metric's interval is read off its resamples. Percentile: where "
            "resampled estimates fall. Basic (pivotal): the resampled estimates' spread "
            "around their own world's true value (for a debiased or unbiased estimator, "
            "the plug-in value of these rows), reflected around the estimate — it removes "
            "the estimator's bias at this n, as Kumar et al.'s code does — and cut at 0, "
            "below which no calibration error lies.",
        )
        methods = interval_methods()
        _config_select(
            "Per-bin interval",
            "interval_method",
            methods,
            d["interval_method"],
            {m: interval_label(m) for m in methods},
            "Interval for each bin's observed frequency in the reliability diagram.",
        )
        toggle(
            st,
            "Consistency band",
            value=bool(d["consistency_band"]),
            key="consistency_band",
            help="Shade, around the diagonal, where each bin's observed frequency falls with "
            "probability `level` if the model is calibrated: labels redrawn as "
            "y* ~ Bernoulli(score) given the scores (Bröcker & Smith 2007), 1,000 redraws.",
        )


def diagram_choice() -> str:
    """Render the Reliability page's choice of diagram; return its registry name.

    The control shows the diagrams' labels and the URL key ``diagram`` holds their names
    (a bound widget would write the labels into the link), so the link is kept by hand.
    """

    options = DIAGRAMS.names()
    check_url_choice(st, "diagram", "Diagram", options, options[0])
    raw = st.query_params.get("diagram")
    if "diagram" not in st.session_state and raw in options:
        st.session_state["diagram"] = raw
    labels = _labels(DIAGRAMS)
    choice = st.segmented_control(
        "Diagram",
        options,
        default=None if "diagram" in st.session_state else options[0],
        required=True,
        format_func=labels.get,
        key="diagram",
        on_change=_diagram_to_url,
        args=(options[0],),
        help="\n".join(f"- **{e.label}**: {e.description}" for e in DIAGRAMS),
    )
    return choice if choice in options else options[0]


def _diagram_to_url(default: str) -> None:
    chosen = st.session_state.get("diagram")
    if chosen in (None, default):
        st.query_params.pop("diagram", None)
    else:
        st.query_params["diagram"] = chosen


def log_count_toggle(key: str) -> bool:
    """A "Log-scale counts" toggle for a chart with count bars (bound to the URL)."""
    return st.toggle(
        "Log-scale counts",
        key=key,
        bind="query-params",
        help="Draw the bin counts on a log axis, so small bins stay visible beside large ones.",
    )


def binned_diagram(pred: Any, result: Any, config: Any) -> None:
    """Lay out the binned reliability diagram of an analysis with its captions."""
    interval = f"{config.confidence_level:.0%} {interval_label(config.interval_method)}"
    if config.lens == "classwise":
        st.markdown(
            f"**Classwise reliability** — one panel per class, per-bin {interval} intervals"
        )
    fig = calls.reliability_chart(pred, result.config, interval=interval)
    if config.lens != "classwise":  # the classwise grid has no count panel
        fig = log_counts(fig, log_count_toggle("reliability_log_counts"))
    chart(fig, "reliability_chart", filename="reliability")
    st.caption(bin_convention(config))
    bands = [c.band for c in result.components if c.band is not None]
    if bands:
        outside = int(result.bin_table["outside_band"].fillna(False).astype(bool).sum())
        st.caption(
            ("Band columns of the bin table" if config.lens == "classwise" else "Shaded")
            + f": the {config.confidence_level:.0%} consistency band (Bröcker & Smith 2007). If "
            "the model were calibrated, each label would be y* ~ Bernoulli(s) for its own score "
            f"s; redrawing the labels {bands[0].n_resamples:,} times with the scores and bins "
            f"fixed (seed {config.seed}), the band holds the central "
            f"{config.confidence_level:.0%} of each bin's redrawn observed frequency. A point "
            f"outside it ({outside} bin(s) here, flagged in the table) is evidence of "
            "miscalibration in that bin — pointwise, one bin at a time, not for all bins at once."
        )
    elif config.consistency_band:
        st.caption(
            f"No consistency band: it is drawn for up to {CONSISTENCY_BAND_MAX_BINS:,} bins "
            "(the discrete binning gives one bin per distinct score)."
        )


def diagram(pred: Any, config: Any, kind: str) -> None:
    """Lay out a reliability diagram of another kind: figure, one-sentence summary, table."""
    with errors.show_errors():
        drawn = calls.diagram(pred, config, kind)
        chart(calls.diagram_chart(pred, config, kind), f"{kind}_chart", filename=kind)
        st.caption(literal(drawn.summary))
        frame = drawn.table()
        if frame is not None:
            table(frame, hide_index=True, key=f"{kind}_table")


def _config_select(
    label: str, key: str, options: list[str], default: str, labels: dict[str, str], intro: str
) -> None:
    """Select box of the config field ``key``: labels shown, registry names in the URL."""
    choice(
        st,
        label,
        options,
        key=key,
        default=default if default in options else options[0],
        format_func=lambda name: labels.get(name, name),
        help=intro,
    )


def _set_n_bins(value: int) -> None:
    st.session_state["n_bins"] = value


#: Fewer bins than this make a reliability diagram that shows little: the bin suggestion
#: never offers them.
MIN_DIAGRAM_BINS = 5


def bins_suggestion() -> None:
    """Caption with the Gupta–Ramdas guidance on the number of bins for the loaded data."""
    pred = state.current_predictions()
    if pred is None:
        return
    n_bins = int(st.session_state.get("n_bins") or 1)
    eps = guarantee_epsilon(pred.n, n_bins)
    best = largest_bins(pred.n, max_bins=1000)
    now = f"ε ≈ {eps:.3f}" if math.isfinite(eps) else "no guarantee (needs n ≥ 2B)"
    useful = best is not None and best >= MIN_DIAGRAM_BINS
    if useful:
        tail = f"the largest B with ε ≤ {DEFAULT_EPSILON} is **{best}**."
    elif best:
        tail = (
            f"only B ≤ {best} reaches ε ≤ {DEFAULT_EPSILON} at this n, too few bins for a "
            "useful diagram: read every bin's interval instead."
        )
    else:
        tail = f"no B reaches ε ≤ {DEFAULT_EPSILON} at this n."
    st.caption(
        f"Gupta–Ramdas (α = {DEFAULT_ALPHA}): with n = {pred.n:,}, B = {n_bins} gives {now}; "
        + tail,
        help="Theorem 3, Eq. (8) of Gupta & Ramdas (2021): with probability "
        "1 − α every bin's mean label is within ε of its true value.",
    )
    if useful and best != n_bins:
        st.button(f"Use B = {best}", key="use_suggested_bins", on_click=_set_n_bins, args=(best,))


def data_badge() -> None:
    """Sidebar line saying what is loaded."""
    pred = state.all_predictions()
    if pred is None:
        st.caption("No data loaded.")
    else:
        st.caption(
            f"**{literal(state.data_source())}** · {pred.n:,} rows · {pred.n_classes} classes"
        )


def sample_picker() -> None:
    """Select box of the bundled samples; picking one loads it (and every page's URL names it)."""
    catalog = state.sample_catalog()
    if not catalog:
        st.caption("No bundled samples are available in this installation.")
        return
    options = ["", *catalog]
    st.selectbox(
        "Sample",
        options,
        format_func=lambda name: "— choose a sample —" if not name else name,
        key=state.SAMPLE,
        # not bound to the URL: every page writes ``sample=`` (state.keep_data_in_link)
        persist_state="session",
        on_change=_on_sample_change,
        help="Out-of-fold predictions of scikit-learn models on datasets bundled with "
        "scikit-learn; see sample_data/README.md.",
    )
    chosen = st.session_state.get(state.SAMPLE)
    for sample in catalog.values():
        if sample.name == chosen and sample.description:
            st.caption(sample.description)


def _on_sample_change() -> None:
    name = st.session_state.get(state.SAMPLE)
    if name:
        st.session_state[state.WORLD] = ""
        state.forget_world()
        state.load_sample(name)


def world_picker() -> None:
    """Pick a ground-truth world and a number of rows; the rows are drawn with the sidebar's seed.

    The world and n go in the URL (``world=...&n=...``, with the sidebar's ``seed``), so a
    shared link draws the same rows. Beside the presets, an expander builds any Beta-score
    world with a GLM curve of Roelofs et al.'s family.
    """

    choices = world_choices()
    current = st.session_state.get(state.WORLD) or st.query_params.get(state.WORLD) or ""
    options = ["", *choices]
    if current and current not in choices:
        options.append(current)  # a Beta + GLM world given by its parameters

    def valid(raw: str) -> bool:
        try:
            world_named(raw)
        except CalibscopeError:
            return False
        return True

    links.check_url_value(
        st, state.WORLD, label="the world", default="", valid=valid, expected="a known world"
    )
    st.selectbox(
        "World",
        options,
        format_func=lambda name: "— choose a world —" if not name else name,
        key=state.WORLD,
        bind="query-params",
        on_change=_on_world_change,
        help="Synthetic predictions whose true calibration error is known: the fitted "
        "networks and figure worlds of Roelofs et al. (2022), Kumar et al.'s Platt worlds, "
        "Widmann et al.'s Dirichlet models M1–M3.",
    )
    number_input(
        st,
        "Rows to draw (n)",
        min_value=1,
        max_value=state.MAX_WORLD_ROWS,
        value=state.DEFAULT_WORLD_ROWS,
        step=100,
        key=state.WORLD_ROWS,
        on_change=_on_world_change,
        help="The rows are drawn with the sidebar's seed; the same world, n and seed "
        "always give the same rows.",
    )
    chosen = st.session_state.get(state.WORLD)
    if chosen:
        st.caption(literal(choices.get(chosen) or world_named(chosen).description))
    with st.expander("Any Beta + GLM world", icon=":material/function:"):
        st.caption(
            "Scores ~ Beta(α, β) and a true calibration curve of the GLM family of "
            "Roelofs et al. (2022), Table 3 (e.g. logit_logit_b0_b1: "
            "μ(c) = σ(b0 + b1·logit c))."
        )
        c1, c2 = st.columns(2)
        c1.number_input("α", min_value=0.001, value=2.0, key="_glm_alpha")
        c2.number_input("β", min_value=0.001, value=0.5, key="_glm_beta")
        st.selectbox("GLM", GLM_NAMES, index=GLM_NAMES.index("logit_logit_b0_b1"), key="_glm_name")
        c1.number_input("b0", value=0.0, key="_glm_b0")
        c2.number_input("b1", value=1.5, key="_glm_b1")

        def use() -> None:
            with errors.show_errors():
                st.session_state[state.WORLD] = glm_world_name(
                    st.session_state["_glm_alpha"],
                    st.session_state["_glm_beta"],
                    st.session_state["_glm_name"],
                    st.session_state["_glm_b0"],
                    st.session_state["_glm_b1"],
                )
                _on_world_change()

        st.button("Use this world", on_click=use, key="_glm_use")


def _on_world_change() -> None:
    name = st.session_state.get(state.WORLD)
    if not name:
        return
    st.session_state[state.SAMPLE] = ""
    rows = st.session_state.get(state.WORLD_ROWS, state.DEFAULT_WORLD_ROWS)
    state.load_world(name, rows, state.analysis_seed())


def world_truth() -> None:
    """Sidebar line with the loaded world's true calibration error under the sidebar's lens and norm."""
    if state.loaded_world() is None:
        return
    with errors.show_errors():
        truth = state.world_truth()
        if truth is None:
            st.caption("The world does not define a true error for this lens and norm.")
            return
        lens = "canonical (total variation)" if truth.lens == "canonical" else truth.lens
        norm = "" if truth.lens == "canonical" else f", {NORM_SYMBOLS[_norm_choice(truth.norm)]}"
        st.info(
            f"**True calibration error** of the world ({lens} lens{norm}): "
            f"**{truth.text}** — compare every estimate with it.",
            icon=":material/target:",
        )


def _file_columns(uploaded: Any) -> list[str]:
    """Column names of an uploaded table (header only), for the mapping select boxes."""
    import io

    import pandas as pd

    raw = uploaded.getvalue()
    try:
        if uploaded.name.lower().endswith((".parquet", ".pq")):
            import pyarrow.parquet as pq

            return list(pq.read_schema(io.BytesIO(raw)).names)
        return [str(c) for c in pd.read_csv(io.BytesIO(raw), nrows=0).columns]
    except (ValueError, OSError, UnicodeError):
        return []


#: The control of the Data page that sets each loader option a ColumnError asks for.
MAPPING_CONTROLS = {
    "label_column": "Label column (below)",
    "prob_columns": "Probability columns (below)",
    "positive_class": "Positive class (below)",
    "labels": "the labels file (the uploader above)",
}


def column_mapping(uploaded: Any) -> dict[str, Any]:
    """Column-mapping controls, fed to the loader; opened when it cannot infer the columns.

    Returns
    -------
    dict
        Loader options (``label_column``, ``prob_columns``, ``positive_class``,
        ``renormalize``, ``drop_missing``); empty means "infer everything".
    """
    if uploaded is None:
        return {}
    problem = state.column_problem(uploaded)
    columns = list(problem.columns) if problem and problem.columns else _file_columns(uploaded)
    with st.expander("Column mapping", expanded=state.upload_failed(), icon=":material/tune:"):
        if problem is not None and state.upload_failed():
            control = MAPPING_CONTROLS.get(problem.argument, problem.argument)
            st.warning(
                f"Set **{control}**"
                + (
                    f": one of {literal(', '.join(problem.candidates))}."
                    if problem.candidates
                    else "."
                ),
                icon=":material/help:",
            )
        st.caption(
            "Columns are inferred from their names (label / y / target / class …; the other "
            "numeric columns are probabilities). Set them here when inference fails."
        )
        label = st.selectbox(
            "Label column", ["", *columns], format_func=lambda c: c or "(infer)", key="map_label"
        )
        probs = st.multiselect(
            "Probability columns",
            [c for c in columns if c != label],
            key="map_probs",
            placeholder="(infer)",
            help="One column for P(y=1) of a binary problem, or one per class, in class order.",
        )
        if problem is not None and problem.argument == "positive_class" and problem.candidates:
            positive = st.selectbox(
                "Positive class (the value the probability column is the probability of)",
                ["", *problem.candidates],
                format_func=lambda c: c or "(choose)",
                key="map_positive_choice",
            )
        else:
            positive = st.text_input(
                "Positive class (binary labels given as two values)",
                key="map_positive",
                help="The label value that the probability column is the probability of.",
            )
        renormalize = st.checkbox(
            "Renormalise rows that do not sum to 1",
            key="map_renormalize",
            help="Otherwise such rows are refused with an explanation.",
        )
        drop_missing = st.checkbox("Drop rows with missing values", key="map_drop_missing")
    out: dict[str, Any] = {}
    if label:
        out["label_column"] = label
    if probs:
        out["prob_columns"] = list(probs)
    if positive and positive.strip():
        out["positive_class"] = positive.strip()
    if renormalize:
        out["renormalize"] = True
    if drop_missing:
        out["drop_missing"] = True
    return out


def lint_report(report: Any, source: str) -> None:
    """The lint report of the loaded data as a table with severity icons.

    Parameters
    ----------
    report : core.data.LintReport
        The findings.
    source : str
        What the data came from: the report names it, so that it is never read as the
        verdict on another file (e.g. one just refused).
    """
    findings = list(report)
    name = literal(source)
    if not findings:
        st.success(f"The lint found no problems in {name}.", icon=":material/check_circle:")
        return
    n_err = sum(f.severity == "error" for f in findings)
    n_warn = sum(f.severity == "warning" for f in findings)
    n_info = len(findings) - n_err - n_warn
    label = f"Lint report of {name}: {n_err} error(s), {n_warn} warning(s), {n_info} note(s)"
    with st.expander(label, expanded=bool(n_err or n_warn), icon=":material/rule:"):
        frame = report.to_frame("ui")
        frame["severity"] = frame["severity"].map(SEVERITY_ICONS)
        table(
            frame[["severity", "code", "message", "columns", "rows", "count"]],
            hide_index=True,
            column_config={
                "message": st.column_config.TextColumn("message", width="large"),
                "rows": st.column_config.TextColumn("rows (0-based)"),
            },
            key="lint_table",
        )


# ---------------------------------------------------------------- reliability page

PAPERS = {
    "kumar": (
        "Kumar, Liang & Ma (2019), Verified Uncertainty Calibration",
        "https://arxiv.org/abs/1909.10155",
    ),
    "roelofs": (
        "Roelofs et al. (2022), Mitigating Bias in Calibration Error Estimation",
        "https://arxiv.org/abs/2012.08668",
    ),
    "gupta": (
        "Gupta & Ramdas (2021), Distribution-free calibration guarantees for histogram binning",
        "https://arxiv.org/abs/2105.04656",
    ),
    "widmann": (
        "Widmann, Lindsten & Zachariah (2019), Calibration tests in multi-class classification",
        "https://arxiv.org/abs/1910.11385",
    ),
}

BIN_COLUMNS = {
    "count": st.column_config.NumberColumn("count", format="%d"),
    **{
        name: st.column_config.NumberColumn(COLUMN_LABELS[name])
        for name in ("lower", "upper", "mean_score", "mean_label", "gap", "low", "high")
        + ("band_low", "band_high")
    },
    "outside_band": st.column_config.CheckboxColumn(
        COLUMN_LABELS["outside_band"],
        help="Observed frequency outside the consistency band (pointwise).",
    ),
}
METRIC_COLUMNS = {
    "metric": None,  # the registry code: the label says it in words
    "label": st.column_config.TextColumn(COLUMN_LABELS["label"]),
    "value": st.column_config.NumberColumn("value"),
    "low": st.column_config.NumberColumn(COLUMN_LABELS["low"]),
    "high": st.column_config.NumberColumn(COLUMN_LABELS["high"]),
    "note": st.column_config.TextColumn("note", width="medium"),
}


def headline(result: Any, config: Any) -> Any:
    """Metric tiles: the headline estimate, n, bins and the seed.

    Returns
    -------
    streamlit.delta_generator.DeltaGenerator
        An empty slot under the estimate for its bootstrap interval.
    """

    c1, c2, c3, c4 = st.columns([2, 1, 1, 1])
    c1.metric(
        f"{ESTIMATORS.get(config.estimator).label} · {NORM_SYMBOLS[_norm_choice(config.norm)]}",
        format_number(result.headline.value),
    )
    slot = c1.empty()
    c2.metric("Rows (n)", f"{result.n:,}")
    c3.metric("Bins", ", ".join(sorted({str(c.bins.n_bins) for c in result.components})) or "—")
    c4.metric("Seed", config.seed)
    return slot


def headline_interval(slot: Any, result: Any, config: Any) -> None:
    """Fill the headline tile's caption with its bootstrap interval."""
    boot = result.headline_interval
    if boot is None:
        return

    ci = boot.confidence_interval
    text = (
        f"{level_words(config.confidence_level, boot.method)} bootstrap interval "
        f"{format_interval(ci.low, ci.high)} "
        f"({config.n_resamples:,} resamples, seed {config.seed})"
    )
    slot.caption(with_outside_note(text, result.headline.value, ci.low, ci.high, boot.method))


def bootstrap_gate(pred: Any, config: Any) -> Any:
    """Return the analysis with bootstrap intervals, and offer the exact bootstrap at large n.

    The analysis's own rule (:func:`core.analyses.analysis.bootstrap_mode`) bootstraps rows while
    that is quick and cells beyond (the fast scheme of :mod:`core.inference.cells`); then a button runs
    the exact bootstrap of every metric, with a progress bar, and keeps it.

    Returns
    -------
    ReliabilityAnalysis or None
        The analysis with intervals, or None when they were not computed.
    """

    if config.n_resamples == 0:
        st.caption("Bootstrap intervals are off (0 resamples in the sidebar).")
        return None
    components = lens_components(config.lens, pred.n_classes)
    shared = (
        f"{interval_words(config.confidence_level, config.bootstrap_interval)} from "
        f"{config.n_resamples:,} resamples shared by all metrics (seed {config.seed})"
    )
    if bootstrap_mode(config, pred.n, components) == "exact":
        st.caption(f"Every estimator on the same bins, with {shared}.")
        with errors.show_errors():
            return calls.analyze(pred, config)
        return None
    exact = dataclasses.replace(config, bootstrap="exact")
    job = ("exact-bootstrap", cache.data_key(pred), exact)
    if cache.asked(job):
        st.caption(f"Every estimator on the same bins, with {shared}: the exact bootstrap.")
        with errors.show_errors():
            return cache.run_with_progress(
                job,
                f"Exact bootstrap: {pred.n:,} rows × {config.n_resamples:,} resamples",
                lambda progress: analyze(pred, exact, progress=progress),
            )
        return None
    st.caption(
        f"Every estimator on the same bins, with {shared} of the **cells** of rows with equal "
        "bins and outcomes (the fast bootstrap for large data: exact counts, a normal term for "
        "the scores within a cell). Estimators that need the rows of each bin show no interval "
        "here."
    )
    st.button(
        "Exact bootstrap of every metric",
        key="run_bootstrap",
        help="Resamples the rows themselves, with a progress bar; the result is kept for this "
        "data and these options.",
        on_click=cache.ask,
        args=(job,),
        icon=":material/play_arrow:",
    )
    with errors.show_errors():
        return calls.analyze(pred, config)
    return None


def recalibrator_settings(summary: Any) -> dict[str, dict[str, Any]]:
    """Controls of every recalibrator's settings (its registry entry's ``settings``).

    Each control is keyed ``recal_<method>_<option>`` and bound to the URL; a setting that
    applies only with another setting's value (e.g. a target of one mode) is passed only
    then.

    Parameters
    ----------
    summary : core.stats.summary.DataSummary
        The data's summary, for settings that start from the data.

    Returns
    -------
    dict
        Method name → options to pass.
    """

    out: dict[str, dict[str, Any]] = {}
    for info in RECALIBRATORS:
        if not info.settings:
            continue
        st.markdown(f"**{info.label}**")
        cols = st.columns(len(info.settings))
        values: dict[str, Any] = {}
        for col, setting in zip(cols, info.settings, strict=True):
            key = f"recal_{info.name}_{setting.name}"
            start = setting.suggest(summary) if setting.suggest else setting.default
            if start is None:
                start = info.options[setting.name].default
            if setting.choices is not None:
                options = list(setting.choices)
                values[setting.name] = choice(
                    col,
                    setting.label,
                    options,
                    default=start,
                    format_func=setting.choices.get,
                    key=key,
                    help=setting.help or None,
                )
            else:
                values[setting.name] = number_input(
                    col,
                    setting.label,
                    min_value=setting.low,
                    max_value=setting.high,
                    value=float(start),
                    step=setting.step,
                    key=key,
                    help=setting.help or None,
                )
        out[info.name] = {s.name: values[s.name] for s in info.settings if s.applies(values)}
    return out


def bin_convention(config: Any) -> str:
    """One sentence stating the bin-edge convention of the chosen binning."""
    if config.binning == "equal-width":
        return (
            f"Bin edges: equal-width, bin k = [k/{config.n_bins}, (k+1)/{config.n_bins}) with "
            "the last bin closed at 1; a score on an edge belongs to the upper bin (0.3 with "
            "10 bins is in bin 3). Empty bins are not drawn."
        )
    if config.binning == "equal-mass":
        ties = (
            "equal scores may be split across neighbouring bins"
            if config.tie_policy == "split"
            else "equal scores are kept in one bin, so fewer bins can result"
        )
        return (
            f"Bin edges: equal-mass by rank, bin k holds ranks ⌈k·n/B⌉ … ⌈(k+1)·n/B⌉ − 1 "
            f"(B = {config.n_bins}); {ties}. Edges shown are midpoints between neighbouring bins."
        )
    return (
        "Bins: one bin per distinct score value (the number of bins is ignored); edges are "
        "midpoints between consecutive values."
    )


def explain_estimator(config: Any) -> None:
    """What the headline estimator computes, its formula and the papers behind it."""

    entry = ESTIMATORS.get(config.estimator)
    with st.expander("What is computed, and which formula", icon=":material/functions:"):
        st.markdown(
            f"**{entry.label}** ({entry.name}). {entry.description}\n\n"
            + (f"Formula: {entry.formula}\n\n" if entry.formula else "")
            + "With bins b = 1…B holding n_b predictions, mean score s̄_b and observed "
            "frequency ȳ_b, the plug-in ℓp calibration error is "
            "(Σ_b (n_b/n)·|ȳ_b − s̄_b|^p)^(1/p); ℓ∞ is the largest gap over non-empty bins. "
            "The classwise lens computes it per class and combines the classes with their "
            "weights as (Σ_k w_k CE_k^p)^(1/p)."
        )
        st.markdown(
            "Sources: "
            + "; ".join(f"[{title}]({url})" for title, url in PAPERS.values())
            + ". Per-bin intervals: Wilson score or Clopper–Pearson exact binomial intervals "
            "for ȳ_b."
        )
