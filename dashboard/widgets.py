"""Widgets and page sections of the dashboard (no calculation: values in, core results out).

The sidebar controls are shared by every page. Each analysis control has ``key=`` equal to its :class:`core.analyses.analysis.AnalysisConfig` field
and ``bind="query-params"``, so a copied URL restores the settings. Options come from the
registries (``core.stats.lenses.LENSES``, ``core.stats.binning.BINNINGS``, ``core.estimators.ESTIMATORS``).
Numbers bound to the URL are drawn with :func:`number_input` and :func:`slider`, which
refuse a malformed value in the link with a warning. User strings put into Markdown go
through :func:`literal`.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import streamlit as st

from core.analyses.calibration_tests import TESTS
from core.base.export import safe_csv
from core.base.numbers import format_frame
from core.estimators import ESTIMATORS
from core.figures.export import FORMATS, export_problem, figure_bytes
from core.stats.binning import BINNINGS
from core.stats.intervals import (
    BOOTSTRAP_INTERVALS,
    INTERVAL_METHODS,
)
from core.stats.lenses import LENSES
from dashboard import cache, links

NORM_SYMBOLS = {"1": "ℓ1", "2": "ℓ2", "inf": "ℓ∞"}


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


#: The MIME type of a downloaded file, by its extension.
MIME_TYPES = {"csv": "text/csv", "json": "application/json", "html": "text/html"}


def download(
    container: Any, label: str, data: Any, *, file_name: str, key: str, icon: str | None = None
) -> None:
    """A download button that does not rerun the page (its MIME type from ``file_name``).

    Parameters
    ----------
    container : streamlit container
        Where to draw it.
    label : str
        The button's label.
    data : str, bytes or callable
        The file's content, or a function returning it (called when clicked).
    file_name : str
        The file's name; its extension gives the MIME type (:data:`MIME_TYPES`).
    key : str
        Widget key.
    icon : str, optional
        The button's icon.
    """
    container.download_button(
        label,
        data=data,
        file_name=file_name,
        mime=MIME_TYPES[file_name.rsplit(".", 1)[-1]],
        on_click="ignore",
        key=key,
        icon=icon,
    )


def ask_button(
    container: Any,
    label: str,
    job: Any,
    *,
    key: str,
    help: str | None = None,
    icon: str = ":material/play_arrow:",
) -> None:
    """A button that asks for a gated computation (:func:`dashboard.cache.ask`) when clicked."""
    container.button(label, key=key, help=help, on_click=cache.ask, args=(job,), icon=icon)


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


# ---------------------------------------------------------------- choices kept in the URL by code

#: Kinds of single-choice control :func:`choice` draws.
CHOICE_KINDS = ("selectbox", "radio", "segmented_control", "select_slider")


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
    into the link; here the link holds :func:`dashboard.links.url_code` of the option (a registry name), the
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
    lookup = links.url_lookup(options, fmt, url_aliases)
    links.check_url_value(
        container,
        key,
        label=label,
        default=default,
        valid=lookup.__contains__,
        expected=links.expected_options(options),
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
    links.write_url(key, None if value == default else links.url_code(value))
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
    if key not in st.session_state:
        lookup = links.url_lookup(options, fmt, url_aliases)
        st.session_state[key] = (
            _linked_choices(key, label, options, lookup) if key in st.query_params else default
        )
    else:
        kept = [o for o in st.session_state[key] if o in options]
        if kept != list(st.session_state[key]):
            st.session_state[key] = kept  # options changed with the data
    links.show_url_note(container, key)
    value = container.multiselect(
        label, options, format_func=fmt, key=key, persist_state="session", **kwargs
    )
    value = [o for o in value if o in options]
    links.write_url(key, None if value == default else ([links.url_code(o) for o in value] or [""]))
    return value


def _linked_choices(key: str, label: str, options: list[Any], lookup: dict[str, Any]) -> list[Any]:
    """The options a link names for a multiselect; its other values are noted and left out."""
    raw = [r for r in st.query_params.get_all(key) if r != ""]
    picked = list(dict.fromkeys(lookup[r] for r in raw if r in lookup))
    bad = [r for r in raw if r not in lookup]
    if bad:
        shown = ", ".join(f"“{r if len(r) <= 40 else r[:40] + '…'}”" for r in bad)
        links.note_url_value(
            key,
            f"The link sets {key} = {shown}, which is not {links.expected_options(options)}; "
            f"{label} leaves it out.",
            picked,
        )
    return picked


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


def norm_choice(norm: float) -> str:
    """Return how a control and the URL write a norm: ``"1"``, ``"2"`` or ``"inf"``."""
    return "inf" if math.isinf(norm) else str(int(norm))


def registry_labels(registry: Any) -> dict[str, str]:
    """Return each entry's label of a registry, by name."""
    return {entry.name: entry.label for entry in registry}


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


def log_count_toggle(key: str) -> bool:
    """A "Log-scale counts" toggle for a chart with count bars (bound to the URL)."""
    return st.toggle(
        "Log-scale counts",
        key=key,
        bind="query-params",
        help="Draw the bin counts on a log axis, so small bins stay visible beside large ones.",
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
