"""Shared dashboard state: the loaded predictions, the analysis config and the link's data.

Every page goes through this module:

- :func:`set_predictions` / :func:`all_predictions` / :func:`current_predictions` hold the
  loaded :class:`core.data.Predictions` (the object and its exact digest) in
  ``st.session_state``, so data survives page changes;
- :func:`analysis_config` turns the sidebar widget values (keys = ``AnalysisConfig`` field
  names) into a typed :class:`core.analyses.analysis.AnalysisConfig`;
- the cached core calls that pages share are :mod:`dashboard.calls`;
- :func:`dashboard.errors.show_errors` turns any error of a core call into ``st.error`` in words, never a
  traceback;
- the rules of values read from the link are :mod:`dashboard.links`.

Every user string put into Markdown (file and model names, error messages, URL values)
goes through :func:`dashboard.text.literal`.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import streamlit as st

from core.analyses.analysis import AnalysisConfig
from core.base.errors import CalibscopeError, ConfigError, phrase
from core.data import ColumnError, load_models, load_predictions
from core.stats.lenses import LENSES
from core.worlds import draw_predictions, true_error, world_named
from dashboard import cache, links
from dashboard.errors import show_errors
from dashboard.text import literal

if TYPE_CHECKING:
    from core.analyses.analysis import AnalysisConfig
    from core.data import Predictions

#: ``st.session_state`` keys owned by this module.
PREDICTIONS = "predictions"
DIGEST = "predictions_digest"
SOURCE = "predictions_source"
#: The bundled sample the loaded predictions are (None for an upload or derived data).
LOADED_SAMPLE = "_loaded_sample"
#: The lens a newly loaded file opens on, set on the next draw of the sidebar.
_PENDING_LENS = "_pending_lens"
_LENS_NOTE = "_lens_note"
#: Widget key of the model picker (a URL parameter, like the analysis options).
MODEL = "model"
ALL_MODELS = "All rows"

#: Sidebar widget keys, in the order of ``AnalysisConfig``'s fields.
CONFIG_KEYS = (
    "lens",
    "binning",
    "n_bins",
    "norm",
    "estimator",
    "tie_policy",
    "seed",
    "n_resamples",
    "confidence_level",
    "interval_method",
    "consistency_band",
    "convention",
    "bootstrap_interval",
)


# ---------------------------------------------------------------- predictions


def set_predictions(predictions: Predictions, *, source: str, sample: str | None = None) -> None:
    """Store freshly loaded predictions for every page of this session.

    Parameters
    ----------
    predictions : core.data.Predictions
        The loaded data (all models).
    source : str
        What it came from, shown to the user (file name or sample name).
    sample : str, optional
        The bundled sample's name when the data is one (a link then names it).
    """
    lens = _lens_for(all_predictions(), predictions)
    if lens is not None:
        st.session_state[_PENDING_LENS] = lens
    st.session_state[PREDICTIONS] = predictions
    st.session_state[DIGEST] = predictions.digest
    st.session_state[SOURCE] = source
    st.session_state[LOADED_SAMPLE] = sample


def natural_lens(predictions: Predictions | None) -> str:
    """The lens a file opens on: binary for one P(y=1) column or two classes, else top-label."""
    if predictions is not None and (predictions.binary or predictions.n_classes == 2):
        return "binary"
    return "top-label"


def _lens_for(before: Predictions | None, after: Predictions) -> str | None:
    """The lens to switch to when ``after`` replaces ``before`` (None: keep the user's)."""
    current = st.session_state.get("lens")
    if current is None and "lens" in st.query_params:
        return None  # the link sets the lens
    new = natural_lens(after)
    if current is None or current == natural_lens(before):
        return new if new != current else None
    if current == "binary" and new != "binary":
        # the binary lens needs two classes: fall back, and say so when the lens is drawn
        st.session_state[_LENS_NOTE] = (
            f"The binary lens needs two classes; this file has {after.n_classes}, so the "
            f"analysis uses the {new} lens."
        )
        return new
    return None


def apply_pending_lens() -> None:
    """Set the lens chosen by :func:`set_predictions`, before the lens widget is drawn."""
    lens = st.session_state.pop(_PENDING_LENS, None)
    if lens is not None:
        st.session_state["lens"] = lens
    note = st.session_state.pop(_LENS_NOTE, None)
    if note is not None:
        st.toast(note, icon=":material/swap_horiz:")


def clear_predictions() -> None:
    """Forget the loaded predictions."""
    for key in (PREDICTIONS, DIGEST, SOURCE, LOADED_SAMPLE):
        st.session_state.pop(key, None)


def all_predictions() -> Predictions | None:
    """Return the loaded predictions (every model), or ``None``."""
    return st.session_state.get(PREDICTIONS)


def data_source() -> str | None:
    """Return the label of what the loaded predictions came from."""
    return st.session_state.get(SOURCE)


def model_names() -> list[str]:
    """Return the model names of the loaded file (empty with one model or none)."""
    pred = all_predictions()
    if pred is None or pred.model is None:
        return []
    return list(models_of(pred))


def models_of(pred: Predictions) -> dict[str, Predictions]:
    """Return one :class:`core.data.Predictions` per model of a file (split once, shared)."""
    return cache.compute(_by_model, pred)


def _by_model(pred: Predictions) -> dict[str, Predictions]:
    return dict(pred.by_model())


_MODEL_NOTE = "_model_note"


def check_model(container: Any) -> None:
    """Clear a model choice that is not a model of the loaded data, and say so in ``container``.

    A link's ``model=`` names a model of the sender's data, and the picker keeps the model
    of the data loaded before; on data without that model the choice is dropped (from the
    link too) and a note says so while this data stays loaded.
    """
    pred = all_predictions()
    if pred is None:
        return
    names = model_names()
    options = [ALL_MODELS, *names]
    chosen = st.session_state.get(MODEL)
    raw = st.query_params.get(MODEL)
    stale = None
    if chosen is not None and chosen not in options:
        del st.session_state[MODEL]
        if raw is not None:
            links.drop_url_param(MODEL)
        stale = chosen
    elif chosen is None and raw is not None and not names:
        links.drop_url_param(MODEL)
        stale = raw
    if stale is not None:
        if names:
            what = f"its models are {', '.join(names)}; the picker shows {names[0]}"
        else:
            what = "it holds one model, so every row is analysed"
        message = f"The model “{stale}” is not in the loaded data ({data_source()}): {what}."
        st.session_state[_MODEL_NOTE] = (pred.digest, message)
    note = st.session_state.get(_MODEL_NOTE)
    if note is not None and note[0] == pred.digest:
        container.warning(literal(note[1]), icon=":material/link_off:")


def current_predictions() -> Predictions | None:
    """Return the predictions of the model picked in the sidebar (all rows by default).

    Returns
    -------
    core.data.Predictions or None
        ``None`` when nothing is loaded.
    """
    pred = all_predictions()
    if pred is None:
        return None
    names = model_names()
    choice = st.session_state.get(MODEL, ALL_MODELS)
    if names and choice in names:
        return models_of(pred)[choice]
    return pred


def require_predictions() -> Predictions:
    """Return the current predictions, or explain how to load some and stop the page.

    Returns
    -------
    core.data.Predictions
        The data of the current model.
    """
    pred = current_predictions()
    if pred is None:
        point_to_data_page(
            "No predictions are loaded yet. Upload a file or pick a bundled sample on the "
            "Data page; the data then stays available on every page."
        )
        st.stop()
    return pred


def require_binned_lens(config: AnalysisConfig, what: str) -> AnalysisConfig:
    """Return the config, or say that its lens has no bins and stop the page.

    ``what`` is what the page does on identical bins ("compare models on identical bins").
    """
    if LENSES.get(config.lens).kernel_only:
        st.info(
            "The canonical lens has no bins; pick the top-label, binary or classwise lens in the "
            f"sidebar to {what}.",
            icon=":material/info:",
        )
        st.stop()
    return config


def point_to_data_page(message: str) -> None:
    """Say why a section needs predictions, with a link to the Data page that loads them."""
    st.info(message, icon=":material/info:")
    st.page_link("app_pages/data.py", label="Go to the Data page", icon=":material/upload_file:")


# ---------------------------------------------------------------- loading

#: Widget key of the bundled-sample picker (a URL parameter, so a shared link reloads it).
SAMPLE = "sample"
#: Columns kept at load besides the predictions and roles: all (the Subgroups page groups by
#: any of them, and cuts time windows from them).
KEEP_COLUMNS = "all"
_UPLOAD_TOKEN = "_upload_token"
_UPLOAD_ERROR = "_upload_error"
_COLUMN_ERROR = "_upload_column_error"


def sample_catalog() -> dict[str, Any]:
    """Return the bundled samples by name (``sample_data.catalog()``; empty when absent).

    The samples live in the repository's ``sample_data/`` folder, which is importable when
    the app runs from the repository (``streamlit run dashboard/app.py``).
    """
    try:
        from sample_data import catalog
    except ImportError:
        return {}
    return dict(catalog())


def load_sample(name: str) -> bool:
    """Load the bundled sample ``name`` into the session.

    Parameters
    ----------
    name : str
        A key of :func:`sample_catalog`.

    Returns
    -------
    bool
        Whether the sample was loaded (errors are shown in place).
    """
    sample = sample_catalog().get(name)
    if sample is None:
        return False
    with show_errors():
        set_predictions(_load_path(str(sample.path)), source=f"sample: {name}", sample=name)
        return True
    return False


def _load_path(path: str) -> Predictions:
    # a bundled file never changes while the app runs: parse it once for all sessions

    return cache.compute(
        load_predictions, path, keep_columns=KEEP_COLUMNS, spinner="Loading the sample…"
    )


def load_sample_from_url(default: str | None = None) -> None:
    """Load the sample named in the URL (``?sample=...``) when nothing is loaded yet.

    Parameters
    ----------
    default : str, optional
        Sample to open with when neither the session nor the URL names one (``make run``
        starts the app with ``-- --sample NAME``).
    """
    if all_predictions() is not None:
        return
    if SAMPLE in st.session_state:
        name = st.session_state[SAMPLE]
    else:
        name = st.query_params.get(SAMPLE) or default
    if not name:
        return
    if name not in sample_catalog():
        st.warning(
            f"The link names the sample “{literal(name)}”, which is not bundled here; nothing "
            "was loaded. Pick a sample or upload a file on the Data page.",
            icon=":material/link_off:",
        )
        return
    if load_sample(name):
        st.session_state[SAMPLE] = name


# ---------------------------------------------------------------- the data of a link

#: URL parameter of the loaded data's fingerprint: the first :data:`DATA_CODE_LENGTH` hex
#: digits of :attr:`core.data.Predictions.digest` (beside ``sample=`` for a bundled sample).
DATA = "data"
DATA_CODE_LENGTH = 12
#: Session key of the data the opening link names: ``{"sample": ..., "data": ...}``.
_LINK_DATA = "_link_data"


def data_code(predictions: Predictions) -> str:
    """Return the short fingerprint of the data written into links (``data=``)."""
    return predictions.digest[:DATA_CODE_LENGTH]


def remember_link_data() -> None:
    """Note, once per session, which data the opening link was made on (before any load)."""
    if _LINK_DATA in st.session_state:
        return
    st.session_state[_LINK_DATA] = {
        "sample": st.query_params.get(SAMPLE) or None,
        "data": st.query_params.get(DATA) or None,
    }


def keep_data_in_link() -> None:
    """Write the loaded data into the link: ``data=`` always, ``sample=`` for a bundled sample.

    Called on every run, before the page: Streamlit drops a page's parameters when another
    page opens, and a copied link must name the data its numbers were computed on. With
    nothing loaded, the link's own values stay (they say what the sender had).
    """
    pred = all_predictions()
    if pred is None:
        return
    wanted = {DATA: data_code(pred), SAMPLE: st.session_state.get(LOADED_SAMPLE) or None}
    for key, value in wanted.items():
        if value is None:
            if key in st.query_params:
                del st.query_params[key]
        elif st.query_params.get(key) != value:
            st.query_params[key] = value


def forget_link_data() -> None:
    """Stop comparing the loaded data with the opening link's (the user has seen the note)."""
    st.session_state[_LINK_DATA] = {"sample": None, "data": None}


def link_data_note() -> str | None:
    """Return the note shown while the loaded data is not the data the link was made on.

    Returns
    -------
    str or None
        ``None`` when the link named no data fingerprint, or the loaded data has it.
    """
    link = st.session_state.get(_LINK_DATA) or {}
    want, sample = link.get("data"), link.get("sample")
    if not want:
        return None
    pred = all_predictions()
    made_on = f"the sample “{sample}”" if sample else "an uploaded file"
    if pred is None:
        return (
            f"This link was made on {made_on} (data {want}), which is not loaded here. Load "
            "the same data on the Data page to see the sender's numbers; the link's options "
            "are already set."
        )
    have = data_code(pred)
    if have == want:
        forget_link_data()  # the link's data is loaded: nothing to say from now on
        return None
    loaded = st.session_state.get(LOADED_SAMPLE)
    if sample and loaded == sample:
        return (
            f"This link was made on the sample “{sample}” with data {want}; the sample "
            f"bundled here is data {have}, a different version, so the numbers may differ "
            "from the sender's."
        )
    return (
        f"This link was made on other data ({made_on}, data {want}); the loaded data is "
        f"{data_source()} (data {have}), so every number differs from the sender's. Load "
        "the link's data on the Data page to reproduce them."
    )


def show_link_data_note() -> None:
    """Show :func:`link_data_note` above the page, with a button that dismisses it."""
    note = link_data_note()
    if note is None:
        return
    text, button = st.columns([6, 1], vertical_alignment="center")
    text.warning(literal(note), icon=":material/link_off:")
    button.button(
        "Dismiss",
        key="link_data_dismiss",
        on_click=forget_link_data,
        help="Stop comparing the loaded data with the link's.",
    )


# ---------------------------------------------------------------- ground-truth worlds

#: Widget keys (and URL parameters) of the world picker: the world's name and the rows drawn.
#: The draw's seed is the sidebar's one seed (``seed``), so ``world=...&n=...&seed=...``
#: reproduces the rows.
WORLD = "world"
WORLD_ROWS = "n"
DEFAULT_WORLD_ROWS = 2000
MAX_WORLD_ROWS = 1_000_000
#: ``(world, n, seed)`` of the rows loaded from a world (absent when other data is loaded).
_WORLD_LOADED = "_world_loaded"


def _draw(name: str, n: int, seed: int) -> Predictions:

    return draw_predictions(name, n, seed=seed)


def load_world(name: str, n: int, seed: int) -> bool:
    """Draw ``n`` rows of the world ``name`` with ``seed`` and load them for every page.

    Returns
    -------
    bool
        Whether the rows were loaded (errors are shown in place).
    """
    with show_errors():
        pred = cache.compute(_draw, name, int(n), int(seed), spinner="Drawing from the world…")
        set_predictions(pred, source=pred.source)
        st.session_state[_WORLD_LOADED] = (name, int(n), int(seed))
        return True
    return False


def loaded_world() -> tuple[str, int, int] | None:
    """Return ``(world, n, seed)`` when the loaded rows were drawn from a world, else None."""
    return st.session_state.get(_WORLD_LOADED)


def forget_world() -> None:
    """Say that the loaded data is no longer a world's draw (a sample or an upload replaced it)."""
    st.session_state.pop(_WORLD_LOADED, None)
    st.query_params.pop(WORLD, None)
    st.query_params.pop(WORLD_ROWS, None)


def analysis_seed() -> int:
    """The sidebar's seed (from the link, or the default, before the sidebar is drawn)."""
    if "seed" in st.session_state:
        return int(st.session_state["seed"])
    raw = st.query_params.get("seed")
    try:
        return int(float(raw)) if raw is not None else int(config_defaults()["seed"])
    except (TypeError, ValueError, OverflowError):
        return int(config_defaults()["seed"])


def sync_world() -> None:
    """Keep the loaded rows equal to the world, n and seed asked for (run before every page).

    The world and n come from the Data page's picker, or from the link when the picker is
    not drawn; the seed is the sidebar's. A change of any of them draws the rows again; a
    link naming a world draws them in a new session. The link keeps ``world`` and ``n``
    on every page while the rows are the world's.
    """

    loaded = loaded_world()
    name = st.session_state.get(WORLD) if WORLD in st.session_state else None
    if name is None:
        name = st.query_params.get(WORLD) or (loaded[0] if loaded else None)
    if not name or (loaded is None and all_predictions() is not None):
        return  # a sample or an upload is loaded; a pick on the Data page loads the world
    rows = st.session_state.get(WORLD_ROWS) if WORLD_ROWS in st.session_state else None
    if rows is None:
        raw = st.query_params.get(WORLD_ROWS)
        try:
            rows = int(float(raw)) if raw is not None else (loaded[1] if loaded else None)
        except (ValueError, OverflowError):
            rows = None
        if rows is None or not 1 <= rows <= MAX_WORLD_ROWS:
            rows = DEFAULT_WORLD_ROWS
    try:
        world_named(name)
    except CalibscopeError as exc:
        if WORLD not in st.session_state:
            links.drop_url_param(WORLD)
        st.warning(
            f"The link names the world “{literal(name)}”, which is not known: {literal(exc)} "
            "Nothing was drawn; pick a world on the Data page.",
            icon=":material/link_off:",
        )
        return
    wanted = (name, int(rows), analysis_seed())
    if wanted != loaded and not load_world(*wanted):
        return
    if WORLD not in st.session_state:
        # the picker is not drawn on this page: the link still names the rows
        if st.query_params.get(WORLD) != name:
            st.query_params[WORLD] = name
        if st.query_params.get(WORLD_ROWS) != str(wanted[1]):
            st.query_params[WORLD_ROWS] = str(wanted[1])


def world_truth(lens: str | None = None, norm: Any = None) -> Any:
    """Return the true calibration error of the loaded world (:func:`core.worlds.true_error`).

    Parameters
    ----------
    lens, norm : optional
        Default: the sidebar's (the lens a file opens on before the sidebar is drawn).

    Returns
    -------
    core.worlds.TrueError or None
        None when no world is loaded or the world does not define it.
    """

    loaded = loaded_world()
    if loaded is None:
        return None
    defaults = config_defaults()
    if lens is None:
        lens = st.session_state.get(_PENDING_LENS) or st.session_state.get("lens")
        lens = lens or natural_lens(all_predictions())
    if norm is None:
        norm = st.session_state.get("norm", defaults["norm"])
    return cache.compute(true_error, loaded[0], lens=lens, norm=norm)


def load_upload(uploaded: Any, labels_file: Any = None, **options: Any) -> None:
    """Parse uploaded files (once per distinct upload and options) into the session.

    One file is loaded as it is; several are one model each (named after the file,
    :func:`core.data.load_models`), sharing the labels file. A broken upload leaves the
    previously loaded data in place and shows why it was refused, and what is still loaded,
    on this and every following rerun, until the files or the options change.

    Parameters
    ----------
    uploaded : UploadedFile or list of UploadedFile
        The predictions file(s).
    labels_file : UploadedFile, optional
        A separate labels file (headerless probability matrix format).
    **options
        Loader options (``label_column``, ``prob_columns``, ``positive_class``, ...).
    """

    files = list(uploaded) if isinstance(uploaded, (list, tuple)) else [uploaded]
    first = files[0]
    if len(files) == 1:
        what, verb = first.name, "was"
    else:
        what, verb = f"{len(files)} files ({', '.join(f.name for f in files)})", "were"
    token = (
        tuple(f.file_id for f in files),
        None if labels_file is None else labels_file.file_id,
        tuple(sorted((k, repr(v)) for k, v in options.items())),
    )
    if st.session_state.get(_UPLOAD_TOKEN) != token:
        st.session_state[_UPLOAD_TOKEN] = token
        st.session_state[_UPLOAD_ERROR] = None
        # kept after a successful load: the mapping controls it opened must stay in place
        previous = st.session_state.get(_COLUMN_ERROR)
        try:
            labels = None if labels_file is None else _named_bytes(labels_file)
            if len(files) == 1:
                pred = load_predictions(
                    first.getvalue(),
                    labels=labels,
                    name=first.name,
                    keep_columns=KEEP_COLUMNS,
                    **options,
                )
            else:
                pred = load_models(
                    [(f.name, f.getvalue()) for f in files],
                    labels=labels,
                    keep_columns=KEEP_COLUMNS,
                    **options,
                )
        except ColumnError as exc:
            st.session_state[_UPLOAD_ERROR] = f"{what} {verb} not loaded: {phrase(exc, 'ui')}"
            st.session_state[_COLUMN_ERROR] = ColumnProblem(
                first.file_id,
                exc.argument,
                tuple(map(str, exc.candidates)),
                tuple(map(str, exc.columns)),
            )
            if previous != st.session_state[_COLUMN_ERROR]:
                # the mapping controls above were drawn before the loader said what it needs
                st.rerun()
        except CalibscopeError as exc:
            st.session_state[_UPLOAD_ERROR] = f"{what} {verb} not loaded: {phrase(exc, 'ui')}"
        except (ValueError, OSError, UnicodeError) as exc:
            # parsers raise their own errors for files that are not tables at all
            st.session_state[_UPLOAD_ERROR] = (
                f"{what} {verb} not loaded: it could not be read as a CSV or Parquet "
                f"table ({exc}). Check the file type and that it holds one row per prediction."
            )
        else:
            set_predictions(pred, source=first.name if len(files) == 1 else pred.source)
            st.session_state[SAMPLE] = ""
            st.session_state[WORLD] = ""
            forget_world()
            # the sidebar (data badge, model picker, bin guidance) was drawn before the upload
            st.rerun()
    if st.session_state.get(_UPLOAD_ERROR):
        st.error(literal(st.session_state[_UPLOAD_ERROR]), icon=":material/error:")
        loaded = data_source()
        if loaded is None:
            st.info("Nothing is loaded.", icon=":material/info:")
        else:
            # the summary below and every page still show the data loaded before
            st.warning(
                f"Still showing **{literal(loaded)}**, the data loaded before; every page "
                f"analyses it until a file loads. Nothing of {literal(what)} is used.",
                icon=":material/history:",
            )


@dataclasses.dataclass(frozen=True)
class ColumnProblem:
    """What the loader could not infer in an upload: the argument to pass and its candidates."""

    file_id: str
    argument: str
    candidates: tuple[str, ...]
    columns: tuple[str, ...]


def column_problem(uploaded: Any) -> ColumnProblem | None:
    """Return the column-inference problem met in this uploaded file, if any."""
    problem = st.session_state.get(_COLUMN_ERROR)
    if problem is None or problem.file_id != uploaded.file_id:
        return None
    return problem


def upload_failed() -> bool:
    """Return whether the last upload was refused."""
    return bool(st.session_state.get(_UPLOAD_ERROR))


def _named_bytes(uploaded: Any) -> Any:
    import io

    buf = io.BytesIO(uploaded.getvalue())
    buf.name = uploaded.name
    return buf


# ---------------------------------------------------------------- configuration


def config_defaults() -> dict[str, Any]:
    """Return the default value of each ``AnalysisConfig`` field."""

    return {f.name: getattr(AnalysisConfig(), f.name) for f in dataclasses.fields(AnalysisConfig)}


def analysis_config() -> AnalysisConfig | None:
    """Build the typed analysis config from the sidebar widgets.

    Returns
    -------
    core.analyses.analysis.AnalysisConfig or None
        ``None`` (after showing the error in place) when a value is invalid.
    """

    values = {k: st.session_state[k] for k in CONFIG_KEYS if k in st.session_state}
    try:
        return AnalysisConfig.from_dict(values)
    except ConfigError as exc:
        refused = exc
    # a headline estimator (or library convention) that does not fit the other choices falls
    # back to the default, with a note: the diagram and the tables stay
    for field, default in FALLBACKS:
        if values.get(field, default) == default:
            continue
        try:
            config = AnalysisConfig.from_dict({**values, field: default})
        except ConfigError:
            continue
        st.warning(
            f"{literal(str(refused))} The analysis uses the default {FALLBACK_WORDS[field]} "
            f"({default}) instead; change the sidebar to choose another.",
            icon=":material/swap_horiz:",
        )
        return config
    with show_errors():
        raise refused
    return None


#: Sidebar choices that fall back to their default when they do not fit the others.
FALLBACKS = (("estimator", "plugin"), ("convention", "calibscope"))
FALLBACK_WORDS = {"estimator": "headline estimator", "convention": "bins (Calibscope's)"}


def require_config() -> AnalysisConfig:
    """Return the sidebar's analysis config, or stop the page under the error it shows."""
    config = analysis_config()
    if config is None:
        st.stop()
    return config
