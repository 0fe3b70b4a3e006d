"""Shared dashboard state: loaded predictions, the analysis config, cached core calls.

Every page goes through this module:

- :func:`set_predictions` / :func:`all_predictions` / :func:`current_predictions` hold the
  loaded :class:`core.data.Predictions` (the object and its exact digest) in
  ``st.session_state``, so data survives page changes;
- :func:`analysis_config` turns the sidebar widget values (keys = ``AnalysisConfig`` field
  names) into a typed :class:`core.analysis.AnalysisConfig`;
- :func:`analyze` is the cached call to :func:`core.analysis.analyze`, keyed on the data
  digest and the config (arrays are passed as ``_``-prefixed arguments so Streamlit never
  hashes a sample of them);
- :func:`show_errors` turns a :class:`core.errors.CalibscopeError` into ``st.error``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import streamlit as st

from core.errors import CalibscopeError
from dashboard import cache

if TYPE_CHECKING:
    from core.analysis import AnalysisConfig, ReliabilityAnalysis
    from core.data import Predictions
    from core.summary import DataSummary

#: ``st.session_state`` keys owned by this module.
PREDICTIONS = "predictions"
DIGEST = "predictions_digest"
SOURCE = "predictions_source"
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
)


# ---------------------------------------------------------------- predictions


def set_predictions(predictions: Predictions, *, source: str) -> None:
    """Store freshly loaded predictions for every page of this session.

    Parameters
    ----------
    predictions : core.data.Predictions
        The loaded data (all models).
    source : str
        What it came from, shown to the user (file name or sample name).
    """
    st.session_state[PREDICTIONS] = predictions
    st.session_state[DIGEST] = predictions.digest
    st.session_state[SOURCE] = source


def clear_predictions() -> None:
    """Forget the loaded predictions."""
    for key in (PREDICTIONS, DIGEST, SOURCE):
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


def point_to_data_page(message: str) -> None:
    """Say why a section needs predictions, with a link to the Data page that loads them."""
    st.info(message, icon=":material/info:")
    st.page_link("app_pages/data.py", label="Go to the Data page", icon=":material/upload_file:")


# ---------------------------------------------------------------- loading

#: Widget key of the bundled-sample picker (a URL parameter, so a shared link reloads it).
SAMPLE = "sample"
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
        set_predictions(_load_path(str(sample.path)), source=f"sample: {name}")
        return True
    return False


def _load_path(path: str) -> Predictions:
    # a bundled file never changes while the app runs: parse it once for all sessions
    from core.data import load_predictions

    return cache.compute(load_predictions, path, spinner="Loading the sample…")


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
    if name and load_sample(name):
        st.session_state[SAMPLE] = name


def load_upload(uploaded: Any, labels_file: Any = None, **options: Any) -> None:
    """Parse an uploaded file (once per distinct upload and options) into the session.

    A broken file leaves the previously loaded data in place and shows why it was refused,
    on this and every following rerun, until the file or the options change.

    Parameters
    ----------
    uploaded : streamlit.runtime.uploaded_file_manager.UploadedFile
        The predictions file.
    labels_file : UploadedFile, optional
        A separate labels file (headerless probability matrix format).
    **options
        Loader options (``label_column``, ``prob_columns``, ``positive_class``, ...).
    """
    from core.data import ColumnError, load_predictions

    token = (
        uploaded.file_id,
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
            pred = load_predictions(
                uploaded.getvalue(), labels=labels, name=uploaded.name, **options
            )
        except ColumnError as exc:
            st.session_state[_UPLOAD_ERROR] = f"{uploaded.name}: {exc}"
            st.session_state[_COLUMN_ERROR] = ColumnProblem(
                uploaded.file_id,
                exc.argument,
                tuple(map(str, exc.candidates)),
                tuple(map(str, exc.columns)),
            )
            if previous != st.session_state[_COLUMN_ERROR]:
                # the mapping controls above were drawn before the loader said what it needs
                st.rerun()
        except CalibscopeError as exc:
            st.session_state[_UPLOAD_ERROR] = f"{uploaded.name}: {exc}"
        except (ValueError, OSError, UnicodeError) as exc:
            # parsers raise their own errors for files that are not tables at all
            st.session_state[_UPLOAD_ERROR] = (
                f"{uploaded.name} could not be read as a CSV or Parquet table ({exc}). "
                "Check the file type and that it holds one row per prediction."
            )
        else:
            set_predictions(pred, source=uploaded.name)
            st.session_state[SAMPLE] = ""
            # the sidebar (data badge, model picker, bin guidance) was drawn before the upload
            st.rerun()
    if st.session_state.get(_UPLOAD_ERROR):
        st.error(st.session_state[_UPLOAD_ERROR], icon=":material/error:")


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
    from core.analysis import AnalysisConfig

    return {f.name: getattr(AnalysisConfig(), f.name) for f in dataclasses.fields(AnalysisConfig)}


def analysis_config() -> AnalysisConfig | None:
    """Build the typed analysis config from the sidebar widgets.

    Returns
    -------
    core.analysis.AnalysisConfig or None
        ``None`` (after showing the error in place) when a value is invalid.
    """
    from core.analysis import AnalysisConfig

    values = {k: st.session_state[k] for k in CONFIG_KEYS if k in st.session_state}
    with show_errors():
        return AnalysisConfig.from_dict(values)
    return None


def require_config() -> AnalysisConfig:
    """Return the sidebar's analysis config, or stop the page under the error it shows."""
    config = analysis_config()
    if config is None:
        st.stop()
    return config


# ---------------------------------------------------------------- cached core calls


def analyze(predictions: Predictions, config: AnalysisConfig) -> ReliabilityAnalysis:
    """Return :func:`core.analysis.analyze` of the predictions (one cache, by digest and config).

    Parameters
    ----------
    predictions : core.data.Predictions
        The data (its exact ``digest`` is the cache key).
    config : core.analysis.AnalysisConfig
        The analysis options.

    Returns
    -------
    core.analysis.ReliabilityAnalysis
        The result.
    """
    from core.analysis import analyze as core_analyze

    return cache.compute(core_analyze, predictions, config, spinner="Computing the analysis…")


def summary(predictions: Predictions) -> DataSummary:
    """Return :func:`core.summary.summarize` of the predictions (cached by digest)."""
    from core.summary import summarize

    return cache.compute(summarize, predictions)


def reliability_chart(predictions: Predictions, config: AnalysisConfig, *, interval: str) -> Any:
    """Return the reliability figure of an analysis (:func:`core.figures.analysis_figure`).

    Cached by digest, config and legend: the classwise grid takes a few tenths of a second.
    """
    return cache.compute(_chart, predictions, config, interval)


def _chart(predictions: Predictions, config: AnalysisConfig, interval: str) -> Any:
    from core.figures import analysis_figure

    return analysis_figure(analyze(predictions, config), interval_label=interval)


def without_resamples(config: AnalysisConfig) -> AnalysisConfig:
    """Return the config with the bootstrap off (the fast part of the analysis)."""
    return dataclasses.replace(config, n_resamples=0)


def bootstrap_work(predictions: Predictions, config: AnalysisConfig) -> int:
    """Rows × resamples × components (one per class for the classwise lens)."""
    components = predictions.n_classes if config.lens == "classwise" else 1
    return predictions.n * config.n_resamples * components


@contextmanager
def show_errors(*, stop: bool = False) -> Iterator[None]:
    """Show a :class:`core.errors.CalibscopeError` raised in the block with ``st.error``.

    Parameters
    ----------
    stop : bool, default=False
        Stop the page after showing the error; otherwise the block is abandoned at the
        error and the code after the ``with`` statement runs on.
    """
    try:
        yield
    except CalibscopeError as exc:
        st.error(str(exc), icon=":material/error:")
        if stop:
            st.stop()
