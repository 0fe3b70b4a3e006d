"""The sidebar: what is loaded (sample, world or upload), the model, and the analysis options.

Every page draws it (:mod:`dashboard.app`); its controls are the fields of the
:class:`~core.analyses.analysis.AnalysisConfig` the pages read (:func:`dashboard.state.analysis_config`),
bound to the URL by :mod:`dashboard.widgets`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import streamlit as st

from core.base.errors import CalibscopeError
from core.base.options import N_BINS, N_RESAMPLES
from core.estimators import ESTIMATORS
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
)
from core.stats.lenses import LENSES
from core.worlds import GLM_NAMES, glm_world_name, world_choices, world_named
from dashboard import errors, links, state, widgets
from dashboard.text import literal

NORM_CHOICES = ("1", "2", "inf")

NORM_LABELS = {"1": "ℓ1 (ECE)", "2": "ℓ2 (RMS CE)", "inf": "ℓ∞ (max CE)"}

TIE_LABELS = {
    "split": "split ties at rank boundaries",
    "keep": "keep equal scores together",
}


def tie_policies() -> list[str]:
    """Return the tie policies of equal-mass binning."""

    return list(TIE_POLICIES)


def interval_methods() -> list[str]:
    """Return the per-bin interval methods."""

    return INTERVAL_METHODS.names()


def model_picker() -> None:
    """Show the model picker when the loaded file holds several models."""
    state.check_model(st)
    names = state.model_names()
    if not names:
        return
    links.check_url_choice(st, state.MODEL, "Model", [state.ALL_MODELS, *names], names[0])
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
        widgets.registry_labels(LENSES),
        "How a prediction becomes a score to calibrate (the canonical lens is for the "
        "kernel estimators of the Tests page).",
    )
    _config_select(
        "Binning",
        "binning",
        BINNINGS.names(),
        d["binning"],
        widgets.registry_labels(BINNINGS),
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
    widgets.number_input(
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
        widgets.registry_labels(CONVENTIONS),
        "Calibscope's bins, or a library's (edges, closed side, clipping, float32, the "
        "extra bin for 1.0) so the value equals what that library reports on this data.",
    )
    _config_select(
        "Norm",
        "norm",
        list(NORM_CHOICES),
        widgets.norm_choice(d["norm"]),
        NORM_LABELS,
        "The p of the ℓp calibration error.",
    )
    _config_select(
        "Estimator",
        "estimator",
        ESTIMATORS.names(),
        d["estimator"],
        widgets.registry_labels(ESTIMATORS),
        "The headline calibration-error estimator; the metrics table shows all of them.",
    )
    with st.expander("Uncertainty and seed", expanded=True):
        widgets.number_input(
            st,
            "Seed",
            min_value=0,
            max_value=2**32 - 1,
            value=int(d["seed"]),
            step=1,
            key="seed",
            help="One seed for everything random (bootstrap, random tie breaks).",
        )
        widgets.number_input(
            st,
            "Bootstrap resamples",
            min_value=N_RESAMPLES.minimum,
            max_value=N_RESAMPLES.maximum,
            value=int(d["n_resamples"]),
            step=100,
            key="n_resamples",
            help="Bootstrap resamples per metric; 0 turns intervals off.",
        )
        widgets.slider(
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
            {m: widgets.interval_label(m) for m in methods},
            "Interval for each bin's observed frequency in the reliability diagram.",
        )
        widgets.toggle(
            st,
            "Consistency band",
            value=bool(d["consistency_band"]),
            key="consistency_band",
            help="Shade, around the diagonal, where each bin's observed frequency falls with "
            "probability `level` if the model is calibrated: labels redrawn as "
            "y* ~ Bernoulli(score) given the scores (Bröcker & Smith 2007), 1,000 redraws.",
        )


def _config_select(
    label: str, key: str, options: list[str], default: str, labels: dict[str, str], intro: str
) -> None:
    """Select box of the config field ``key``: labels shown, registry names in the URL."""
    widgets.choice(
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
        format_func=_or_blank("— choose a sample —"),
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


def _or_blank(blank: str) -> Callable[[str], str]:
    """A select box's labels: the option itself, ``blank`` for the empty option (nothing)."""
    return lambda name: name or blank


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
        format_func=_or_blank("— choose a world —"),
        key=state.WORLD,
        bind="query-params",
        on_change=_on_world_change,
        help="Synthetic predictions whose true calibration error is known: the fitted "
        "networks and figure worlds of Roelofs et al. (2022), Kumar et al.'s Platt worlds, "
        "Widmann et al.'s Dirichlet models M1–M3.",
    )
    widgets.number_input(
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
        norm = (
            ""
            if truth.lens == "canonical"
            else f", {widgets.NORM_SYMBOLS[widgets.norm_choice(truth.norm)]}"
        )
        st.info(
            f"**True calibration error** of the world ({lens} lens{norm}): "
            f"**{truth.text}** — compare every estimate with it.",
            icon=":material/target:",
        )
