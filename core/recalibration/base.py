"""Shared machinery of the recalibrators: inputs, lenses, fitted parameters, registry.

Every recalibrator has the same shape: ``make_recalibrator(name, **options)``,
``fit(probs or logits, labels)``, ``predict_proba(probs or logits)`` returning an
``(n, K)`` matrix whose rows sum to 1, ``get_params()`` in the scikit-learn style,
and frozen :class:`FittedParameters` that round-trip through JSON.

One-dimensional recalibrators (Platt, isotonic, histogram binning, scaling-binning)
work through a *lens*:

- ``binary``: recalibrate P(y=1); the output row is ``[1 - q, q]``.
- ``classwise``: recalibrate each class one-vs-rest, then divide each row by its sum
  (a row whose recalibrated entries are all 0 becomes uniform).
- ``top-label``: recalibrate the confidence ``c`` of the predicted class to ``c'``
  and scale the other entries by ``(1 - c') / (1 - c)`` (spread ``1 - c'`` evenly
  when ``c = 1``), so rows still sum to 1. When a scaled entry would exceed ``c'``,
  the others are mixed towards the even share ``(1 - c')/(K - 1)`` just enough that
  the predicted class stays on top, so the top-label confidence of the output is
  exactly ``c'`` (possible whenever ``c' >= 1/K``).
"""

from __future__ import annotations

import inspect
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np
from numpy.random import Generator
from numpy.typing import ArrayLike

from core.base.errors import ConfigError, DataError, FitError
from core.base.numeric import (  # noqa: F401  (re-exported for the recalibrators)
    BLOCK_ENTRIES,
    CLIP,
    blocks,
    logit,
    sigmoid,
    softmax,
)
from core.base.parallel import map_ordered
from core.base.registry import Entry, Registry
from core.base.validation import as_labels, as_prob_matrix


#: The registry of recalibrators; entry ``func`` is the recalibrator class.
@dataclass(frozen=True, kw_only=True)
class RecalibratorInfo(Entry):
    """A recalibrator class and what it is.

    Attributes
    ----------
    family : {"scaling", "binning", "selective"}
        How it maps scores.
    discrete_output : bool
        Its outputs take few distinct values (evaluate them with discrete bins).
    accuracy_preserving : bool
        It never changes the predicted class.
    selective : bool
        It rejects some rows (report its coverage).
    min_rows_per_bin : int
        Calibration rows it needs per bin (uniform-mass binning needs 2); 0 for none.
    settings : tuple of Setting
        The options a page offers beyond the shared ones (``n_bins``, ``lens``, ``seed``).
    """

    family: str
    discrete_output: bool = False
    accuracy_preserving: bool = False
    selective: bool = False
    min_rows_per_bin: int = 0
    settings: tuple[Setting, ...] = ()

    @property
    def options(self) -> dict[str, OptionSpec]:
        """The constructor's keyword options: name → :class:`OptionSpec` (default, type)."""
        sig = inspect.signature(self.func.__init__)
        return {
            p.name: OptionSpec(p.name, p.default, str(p.annotation))
            for p in sig.parameters.values()
            if p.name != "self" and p.kind == p.KEYWORD_ONLY
        }

    def min_calibration_rows(self, n_bins: int) -> int:
        """Fewest calibration rows it can be fitted on with ``n_bins`` bins."""
        return self.min_rows_per_bin * int(n_bins)


@dataclass(frozen=True)
class OptionSpec:
    """One option of a recalibrator: its name, default and declared type."""

    name: str
    default: Any
    annotation: str


@dataclass(frozen=True)
class Setting:
    """An option a page offers for a recalibrator, with how to show it.

    Attributes
    ----------
    name : str
        The constructor option.
    label : str
        Label of its control.
    choices : mapping or None
        Value → label of a choice (a select box); None for a number.
    low, high, step : float or None
        Range and step of a number.
    default : Any
        The value a page starts from (the constructor's default when None).
    applies_when : tuple or None
        ``(option, value)``: the setting is passed only when that other option has that
        value (e.g. a target used by one mode only).
    suggest : callable or None
        ``suggest(summary) -> value``: a starting value from the data's
        :class:`core.stats.summary.DataSummary`, used instead of ``default``.
    help : str
        Tooltip.
    """

    name: str
    label: str
    choices: Mapping[Any, str] | None = None
    low: float | None = None
    high: float | None = None
    step: float | None = None
    default: Any = None
    applies_when: tuple[str, Any] | None = None
    suggest: Callable[[Any], Any] | None = None
    help: str = ""

    def applies(self, values: Mapping[str, Any]) -> bool:
        """Whether the setting is passed, given the values of the method's other settings."""
        return self.applies_when is None or values.get(self.applies_when[0]) == self.applies_when[1]


RECALIBRATORS: Registry[RecalibratorInfo] = Registry("recalibrator", RecalibratorInfo)

LENS_CHOICES = ("auto", "binary", "top-label", "classwise")


# --------------------------------------------------------------------------- inputs


class Inputs:
    """Validated predictions in both probability and log-score form.

    Only the form that was given is held on construction; the other one is computed
    on first use and cached (an ``(n, K)`` softmax or log pass is the largest cost of
    the cheap recalibrators at large ``K``, and most of them need only one form).

    Parameters
    ----------
    probs : numpy.ndarray or None
        ``(n, K)`` probabilities (None when ``log_scores`` is given).
    log_scores : numpy.ndarray or None
        ``(n, K)`` scores whose softmax is ``probs``: the logits when logits were
        given, else ``log(clip(probs))`` (computed lazily).
    from_logits : bool
        Whether logits were given.
    """

    __slots__ = ("_exact_log", "_log_scores", "_probs", "from_logits", "probs_owned")

    def __init__(
        self, probs: np.ndarray | None, log_scores: np.ndarray | None, from_logits: bool
    ) -> None:
        if probs is None and log_scores is None:
            raise ValueError("Inputs needs probabilities or log-scores.")
        self._probs = probs
        self._log_scores = log_scores
        self._exact_log: np.ndarray | None = None
        self.from_logits = bool(from_logits)
        #: Whether ``probs`` was computed here (a buffer no caller holds, reusable).
        self.probs_owned = False

    @property
    def probs(self) -> np.ndarray:
        """``(n, K)`` probabilities (the softmax of the logits, computed once)."""
        if self._probs is None:
            self._probs = softmax(self._log_scores)
            self.probs_owned = True
        return self._probs

    @property
    def has_probs(self) -> bool:
        """Whether the probabilities are held (given, or already computed)."""
        return self._probs is not None

    def probs_t(self) -> np.ndarray:
        """Return the ``(K, n)`` C-contiguous transpose of the probabilities (a new matrix).

        From logits, the softmax is computed block by block straight into the transposed
        matrix (the same arithmetic as :func:`softmax`, so the same bits) and the
        ``(n, K)`` probabilities are not kept: a second matrix of fresh memory costs more
        than the softmax itself.
        """
        if self._probs is not None:
            return transpose(self._probs)
        return softmax_t(self._log_scores)

    @property
    def log_scores(self) -> np.ndarray:
        """``(n, K)`` logits, or ``log(max(probs, CLIP))`` computed once.

        The floor ``CLIP = 1e-12`` keeps the features finite for the recalibrators whose
        affine maps mix or re-sign the classes' log-scores (vector and matrix scaling,
        Dirichlet calibration, Meta-Cal's selector): a probability below ``1e-12``
        (an exact zero included) enters them as ``log 1e-12 ≈ −27.63``. Temperature
        scaling reads :attr:`exact_log_scores` instead.
        """
        if self._log_scores is None:
            self._log_scores = np.log(np.maximum(self._probs, CLIP))
        return self._log_scores

    @property
    def exact_log_scores(self) -> np.ndarray:
        """``(n, K)`` logits, or the exact ``log p`` (``−inf`` where ``p = 0``), computed once.

        What temperature scaling fits on: ``softmax(log p / T)`` keeps a class with
        ``p = 0`` at exactly 0 for every ``T``, as a logit of ``−∞`` would, and tiny
        probabilities keep their own logarithm (no floor), so the fit from probabilities
        equals the fit from the logits they came from.
        """
        if self.from_logits:
            return self._log_scores  # type: ignore[return-value]
        if self._exact_log is None:
            with np.errstate(divide="ignore"):
                self._exact_log = np.log(self._probs)
        return self._exact_log

    @property
    def n(self) -> int:
        """Number of rows."""
        return self._shape[0]

    @property
    def n_classes(self) -> int:
        """Number of classes ``K``."""
        return self._shape[1]

    @property
    def _shape(self) -> tuple[int, ...]:
        arr = self._probs if self._probs is not None else self._log_scores
        return arr.shape


def as_inputs(x: ArrayLike, *, logits: bool = False) -> Inputs:
    """Validate probabilities or logits and return both forms.

    Parameters
    ----------
    x : array_like
        ``(n,)`` P(y=1) or binary log-odds, or ``(n, K)`` probabilities or logits.
    logits : bool, default False
        Whether ``x`` holds logits (a 1-D vector is then the log-odds of class 1).

    Returns
    -------
    Inputs
        Probabilities and log-scores.

    Raises
    ------
    DataError
        For non-finite values, bad shapes, or probabilities that are not distributions.
    """
    if not logits:
        p = as_prob_matrix(x)
        return Inputs(p, None, False)
    z = np.asarray(x, dtype=np.float64)
    if z.ndim == 2 and z.shape[1] == 1:
        z = z[:, 0]
    if z.ndim == 1:
        z = np.column_stack([np.zeros_like(z), z])
    if z.ndim != 2 or z.shape[1] < 2:
        raise DataError(
            f"Logits must be 1-D (binary log-odds) or 2-D (n, K) with K >= 2; got shape {z.shape}."
        )
    if z.shape[0] == 0:
        raise DataError("There are no predictions (0 rows).")
    if not np.isfinite(z).all():
        bad = int((~np.isfinite(z)).any(axis=1).sum())
        raise DataError(f"{bad} row(s) of logits contain NaN or infinity; drop or fix them.")
    return Inputs(None, z, True)


def check_fit_labels(labels: ArrayLike, inputs: Inputs) -> np.ndarray:
    """Validate labels for fitting: class indices, one per row, at least two classes seen.

    Raises
    ------
    FitError
        If every calibration label is the same class.
    """
    y = as_labels(labels, inputs.n_classes, inputs.n)
    if y.min() == y.max():  # not numpy.unique: a sort of the labels costs as much as a fit
        raise FitError(
            f"All {y.size} calibration labels are class {int(y[0])}; a recalibrator needs "
            "rows of at least two classes. Use a larger or stratified calibration split."
        )
    return y


def check_both_outcomes(n_pos: np.ndarray, n: int, method: str) -> None:
    """Check that every lens component has positive and negative outcomes.

    Parameters
    ----------
    n_pos : numpy.ndarray
        ``(C,)`` positive outcomes of each component.
    n : int
        Rows of each component.
    method : str
        Name of the recalibrator (or step), for the message.

    Raises
    ------
    FitError
        Naming the first component whose outcomes are all positive or all negative.
    """
    one = (n_pos == 0) | (n_pos == n)
    if one.any():
        j = int(np.flatnonzero(one)[0])
        raise FitError(
            f"{method} needs both outcomes in every component; component {j} has only "
            f"{'positives' if n_pos[j] else 'negatives'}. Use a larger or stratified "
            "calibration split."
        )


def chunk_sizes(n: int, parts: int) -> np.ndarray:
    """Return the sizes of ``numpy.array_split``'s ``parts`` chunks of ``n`` items.

    Examples
    --------
    >>> chunk_sizes(10, 3).tolist()
    [4, 3, 3]
    """
    sizes = np.full(parts, n // parts)
    sizes[: n % parts] += 1
    return sizes


# --------------------------------------------------------------------------- parameters


def _freeze(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        arr = np.array(value, copy=True)
        arr.setflags(write=False)
        return arr
    if isinstance(value, Mapping):
        return MappingProxyType({str(k): _freeze(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, np.generic):
        return value.item()
    return value


def _to_jsonable(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return _to_jsonable(value.tolist())
    if isinstance(value, Mapping):
        return {str(k): _to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_to_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


def _from_jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _from_jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        items = [_from_jsonable(v) for v in value]
        if items and all(isinstance(v, int | float) and not isinstance(v, bool) for v in items):
            return np.asarray(items, dtype=np.float64)
        if items and all(isinstance(v, np.ndarray) for v in items):
            if len({v.shape for v in items}) == 1:
                return np.stack(items)
        return items
    if value in ("nan", "inf", "-inf"):
        return float(value)
    return value


@dataclass(frozen=True)
class FittedParameters:
    """The frozen result of fitting a recalibrator.

    Attributes
    ----------
    method : str
        Registry name of the recalibrator.
    n_classes : int
        Number of classes seen at fit time.
    options : Mapping
        The constructor options (``get_params()``).
    values : Mapping
        Fitted parameters (read-only arrays, numbers, nested mappings).
    info : Mapping
        Diagnostics: rows used, notes on fallbacks, guarantees.
    """

    method: str
    n_classes: int
    options: Mapping[str, Any] = field(default_factory=dict)
    values: Mapping[str, Any] = field(default_factory=dict)
    info: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "options", _freeze(dict(self.options)))
        object.__setattr__(self, "values", _freeze(dict(self.values)))
        object.__setattr__(self, "info", _freeze(dict(self.info)))

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict (arrays as lists; non-finite floats as strings)."""
        return {
            "method": self.method,
            "n_classes": self.n_classes,
            "options": _to_jsonable(self.options),
            "values": _to_jsonable(self.values),
            "info": _to_jsonable(self.info),
        }

    def to_json(self, indent: int | None = 2) -> str:
        """Return the parameters as strict JSON text."""
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FittedParameters:
        """Rebuild parameters from :meth:`to_dict` output."""
        try:
            return cls(
                method=str(data["method"]),
                n_classes=int(data["n_classes"]),
                options={k: _from_jsonable(v) for k, v in dict(data["options"]).items()},
                values=_from_jsonable(dict(data["values"])),
                info=_from_jsonable(dict(data.get("info", {}))),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise DataError(f"Not a recalibrator parameter record: {exc}") from None

    @classmethod
    def from_json(cls, text: str) -> FittedParameters:
        """Rebuild parameters from :meth:`to_json` output."""
        return cls.from_dict(json.loads(text))


# --------------------------------------------------------------------------- base class


class Recalibrator:
    """Base class: validation, ``get_params``, parameter freezing, JSON restore.

    Subclasses define ``__init__`` with keyword-only options stored under the same
    attribute names, and implement :meth:`_fit` and :meth:`_predict`.
    """

    #: Registry name, set by :func:`register`.
    name: ClassVar[str] = ""
    #: Whether outputs take few distinct values (evaluate with discrete bins).
    discrete_output: ClassVar[bool] = False

    params_: FittedParameters | None = None

    # -- scikit-learn style parameters
    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """Return the constructor options, as scikit-learn's ``get_params``.

        Parameters
        ----------
        deep : bool
            Ignored (no nested estimators); kept for scikit-learn compatibility.

        Returns
        -------
        dict
            Option name to value.
        """
        return {k: getattr(self, k) for k in RECALIBRATORS.get(self.name).options}

    def set_params(self, **params: Any) -> Recalibrator:
        """Set options (validated by re-running the constructor) and forget any fit."""
        merged = {**self.get_params(), **params}
        fresh = type(self)(**merged)
        self.__dict__.clear()
        self.__dict__.update(fresh.__dict__)
        return self

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"

    # -- fitting and predicting
    def fit(self, probs: ArrayLike, labels: ArrayLike, *, logits: bool = False) -> Recalibrator:
        """Fit on calibration rows.

        Parameters
        ----------
        probs : array_like
            ``(n,)`` P(y=1) or ``(n, K)`` probabilities; logits when ``logits=True``.
        labels : array_like
            Class indices ``0..K-1``.
        logits : bool, default False
            Whether ``probs`` holds logits.

        Returns
        -------
        Recalibrator
            ``self``, with :attr:`params_` set.

        Raises
        ------
        FitError
            When the method cannot be fitted on these rows (one class, too few rows).
        """
        inputs = as_inputs(probs, logits=logits)
        y = check_fit_labels(labels, inputs)
        values, info = self._fit(inputs, y)
        info = {"n_fit": int(inputs.n), "fitted_on_logits": bool(inputs.from_logits), **info}
        self.params_ = FittedParameters(
            method=self.name,
            n_classes=inputs.n_classes,
            options=self.get_params(),
            values=values,
            info=info,
        )
        return self

    def predict_proba(self, probs: ArrayLike, *, logits: bool = False) -> np.ndarray:
        """Return recalibrated probabilities.

        Parameters
        ----------
        probs : array_like
            Predictions in the same form as at fit time (probabilities or, with
            ``logits=True``, logits).
        logits : bool, default False
            Whether ``probs`` holds logits.

        Returns
        -------
        numpy.ndarray
            ``(n, K)`` probabilities; every row sums to 1.
        """
        params = self._require_fitted()
        return self._predict(params, self._checked_inputs(params, probs, logits))

    @staticmethod
    def _checked_inputs(params: FittedParameters, probs: ArrayLike, logits: bool) -> Inputs:
        """Return the predictions to recalibrate, with as many classes as at fit time."""
        inputs = as_inputs(probs, logits=logits)
        if inputs.n_classes != params.n_classes:
            raise DataError(
                f"This recalibrator was fitted on {params.n_classes} classes; "
                f"got predictions with {inputs.n_classes}."
            )
        return inputs

    def _require_fitted(self) -> FittedParameters:
        if self.params_ is None:
            raise FitError(f"{type(self).__name__} is not fitted yet; call fit() first.")
        return self.params_

    @property
    def fitted_params(self) -> FittedParameters:
        """The frozen fitted parameters (raises if not fitted)."""
        return self._require_fitted()

    @classmethod
    def from_params(cls, params: FittedParameters | Mapping[str, Any] | str) -> Recalibrator:
        """Rebuild a fitted recalibrator from its parameters (object, dict or JSON text)."""
        if isinstance(params, str):
            params = FittedParameters.from_json(params)
        elif not isinstance(params, FittedParameters):
            params = FittedParameters.from_dict(params)
        klass = RECALIBRATORS.get(params.method).func
        options = {
            k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in params.options.items()
        }
        obj = klass(**options)
        obj.params_ = params
        return obj

    # -- to implement
    def _fit(self, inputs: Inputs, labels: np.ndarray) -> tuple[dict[str, Any], dict[str, Any]]:
        raise NotImplementedError

    def _predict(self, params: FittedParameters, inputs: Inputs) -> np.ndarray:
        raise NotImplementedError


def seed_value(seed: int | None) -> int:
    """Validate a recalibrator seed (an int, or None meaning 0) and return it as an int."""
    if seed is None:
        return 0
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise ConfigError(
            f"seed must be an integer (or None for 0) so fitted parameters can be saved; got {seed!r}."
        )
    return int(seed)


def fit_rng(seed: int | None) -> Generator:
    """Return the generator of fit-time randomness."""
    return np.random.default_rng(seed_value(seed))


def predict_rng(seed: int | None) -> Generator:
    """Return the generator of prediction-time randomness (distinct from the fit-time stream)."""
    return np.random.default_rng([seed_value(seed), 1])


# --------------------------------------------------------------------------- lenses


#: The fitted parameters of one lens component.
Component = Mapping[str, Any]

#: The fit of one lens component: its parameters and notes on the fit.
ComponentFit = tuple[dict[str, Any], list[str]]


def component_arrays(comps: Sequence[Component], *keys: str) -> tuple[np.ndarray, ...]:
    """Return one ``(C,)`` float array per key: that scalar parameter of every component."""
    return tuple(np.array([float(c[k]) for c in comps]) for k in keys)


class OneDimRecalibrator(Recalibrator):
    """A recalibrator of one score at a time, applied through a lens (module docstring).

    Subclasses fit and apply one component at a time (:meth:`_fit_component`,
    :meth:`_apply_component`, which must not modify shared state: components run on a
    thread pool) or override :meth:`_fit_components` and :meth:`_apply_components`
    to handle all components at once.
    """

    lens: str = "auto"
    seed: int | None = 0

    def _check_lens(self, lens: str) -> str:
        if lens not in LENS_CHOICES:
            raise ConfigError(f"Unknown lens {lens!r}; choose one of {', '.join(LENS_CHOICES)}.")
        return lens

    @staticmethod
    def _resolve_lens(lens: str, k: int) -> str:
        if lens == "auto":
            return "binary" if k == 2 else "classwise"
        if lens == "binary" and k != 2:
            raise ConfigError(
                f"The binary lens needs two classes; these predictions have {k}. "
                "Use lens='classwise' or 'top-label'."
            )
        return lens

    #: Whether components need log-odds scores (scaling-type maps); rank-based ones do not.
    uses_log_odds: ClassVar[bool] = True

    @property
    def _uses_scores(self) -> bool:
        """Whether the component scores themselves are used (when log-odds are too)."""
        return True

    def _components(
        self, lens: str, inputs: Inputs
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """Return the component scores, their log-odds, and the predicted class (top-label).

        Scores and log-odds are ``(C, n)`` C-contiguous matrices, one row per lens
        component (``C = K`` classwise, else 1), so a component is a contiguous row view
        and batched code reduces along ``axis=1``. When log-odds are not needed
        (``uses_log_odds = False``) the second matrix is the scores themselves; when
        only log-odds are used (``_uses_scores`` False), the first matrix is the log-odds.
        """
        need = self.uses_log_odds
        if lens != "classwise":
            p = inputs.probs
        if lens == "binary":
            s = p[:, 1].copy()[None, :]  # a copy: predictions may overwrite it
            if not need:
                return s, s, None
            if inputs.from_logits:
                z = inputs.log_scores
                return s, (z[:, 1] - z[:, 0])[None, :], None
            return s, logit(s), None
        if lens == "top-label":
            pred = p.argmax(axis=1)
            conf = p[np.arange(p.shape[0]), pred][None, :]
            return conf, logit(conf) if need else conf, pred
        s = inputs.probs_t()
        if not need:
            return s, s, None
        if not self._uses_scores:
            return logit(s, out=s), s, None  # in place: the scores are not needed
        return s, logit(s), None

    @staticmethod
    def _outcomes(lens: str, labels: np.ndarray, k: int, pred: np.ndarray | None) -> np.ndarray:
        """Return the ``(C, n)`` boolean outcome of every component.

        Boolean, not float64: an eighth of the memory (the classwise matrix is one-hot),
        and every consumer (sums, ``bincount`` weights, comparisons) treats it as 0/1.
        """
        if lens == "binary":
            return (labels == 1)[None, :]
        if lens == "top-label":
            return (labels == pred)[None, :]
        out = np.zeros((k, labels.size), dtype=bool)
        out[labels, np.arange(labels.size)] = True
        return out

    def _fit(self, inputs: Inputs, labels: np.ndarray) -> tuple[dict[str, Any], dict[str, Any]]:
        lens = self._resolve_lens(self.lens, inputs.n_classes)
        scores, log_odds, pred = self._components(lens, inputs)
        outcomes = self._outcomes(lens, labels, inputs.n_classes, pred)
        rng = fit_rng(self.seed)
        comps, notes = [], []
        for j, (vals, note) in enumerate(self._fit_components(scores, log_odds, outcomes, rng)):
            comps.append(vals)
            if note:
                prefix = f"class {j}: " if lens == "classwise" else ""
                notes.extend(prefix + m for m in note)
        return {"lens": lens, "components": comps}, {"notes": notes}

    def _fit_components(
        self, scores: np.ndarray, log_odds: np.ndarray, outcomes: np.ndarray, rng: Generator
    ) -> list[ComponentFit]:
        """Fit every component from ``(C, n)`` matrices, one at a time on a thread pool.

        The random numbers of every component (:meth:`_fit_draws`) are drawn here, in
        component order (the stream of fitting one component after another), so the
        fits do not depend on the number of threads. Subclasses that fit all components
        at once override this.
        """
        n = scores.shape[1]
        items = ((j, self._fit_draws(n, rng)) for j in range(scores.shape[0]))
        return map_ordered(
            lambda item: self._fit_component(
                scores[item[0]], log_odds[item[0]], outcomes[item[0]], item[1]
            ),
            items,
            entries=scores.size,
        )

    def _apply_components(
        self, comps: list[Component], scores: np.ndarray, log_odds: np.ndarray, rng: Generator
    ) -> np.ndarray:
        """Return the ``(C, n)`` recalibrated scores, one component at a time on a thread pool.

        Each result overwrites its own component's row of ``scores`` (a fresh matrix
        made by :meth:`_components`, whose row is no longer needed), so predicting
        allocates no second ``(C, n)`` matrix. Random numbers (:meth:`_apply_draws`)
        are reserved in component order in the calling thread. Subclasses that apply
        all components at once override this.
        """
        n = scores.shape[1]
        items = ((j, self._apply_draws(c, n, rng)) for j, c in enumerate(comps))

        def apply(item: tuple[int, Any]) -> None:  # each row is written by one thread only
            j, draws = item
            scores[j] = self._apply_component(comps[j], scores[j], log_odds[j], draws)

        map_ordered(apply, items, entries=scores.size)
        return scores

    def _predict(self, params: FittedParameters, inputs: Inputs) -> np.ndarray:
        lens, new, pred = self._new_scores(params, inputs)
        if lens == "classwise":
            # the classwise output can reuse the probability buffer when this call made it;
            # clipping is done block by block while the result is transposed back
            out = inputs.probs if inputs.has_probs and inputs.probs_owned else None
            return combine_classwise(new, out=out, clip=True)
        np.clip(new, 0.0, 1.0, out=new)
        return combine_components(lens, new, inputs.probs, pred)

    def _new_scores(
        self, params: FittedParameters, inputs: Inputs
    ) -> tuple[str, np.ndarray, np.ndarray | None]:
        """Return the lens, the recalibrated ``(C, n)`` scores and the predicted class.

        The scores are not yet clipped to [0, 1]; the class is None but on the top-label lens.
        """
        lens = params.values["lens"]
        scores, log_odds, pred = self._components(lens, inputs)
        new = self._apply_components(
            params.values["components"], scores, log_odds, predict_rng(self.seed)
        )
        return lens, new, pred

    def predict_component(self, probs: ArrayLike, *, logits: bool = False) -> np.ndarray:
        """Return the recalibrated score of a one-component lens, without the matrix.

        The column of :meth:`predict_proba` that holds it, to the bit: P(y = 1) on the
        binary lens, the predicted class's probability on the top-label lens.

        Parameters
        ----------
        probs : array_like
            Predictions as at fit time.
        logits : bool, default False
            Whether ``probs`` holds logits.

        Returns
        -------
        numpy.ndarray
            ``(n,)`` scores in [0, 1].

        Raises
        ------
        ConfigError
            On the classwise lens (one score per class: use :meth:`predict_proba`).
        """
        params = self._require_fitted()
        if params.values["lens"] == "classwise":
            raise ConfigError(
                "The classwise lens recalibrates every class; use predict_proba for its matrix."
            )
        _, new, _ = self._new_scores(params, self._checked_inputs(params, probs, logits))
        return np.clip(new[0], 0.0, 1.0)

    def _fit_draws(self, n: int, rng: Generator) -> Any:
        """Draw the random numbers one component's fit of ``n`` rows uses (None: it uses none)."""
        return None

    def _apply_draws(self, c: Component, n: int, rng: Generator) -> Any:
        """Draw the random numbers applying component ``c`` to ``n`` rows uses (None: none)."""
        return None

    def _fit_component(
        self, s: np.ndarray, lo: np.ndarray, t: np.ndarray, draws: Any
    ) -> ComponentFit:
        raise NotImplementedError

    def _apply_component(
        self, c: Component, s: np.ndarray, lo: np.ndarray, draws: Any
    ) -> np.ndarray:
        raise NotImplementedError


#: Entries per block of the fused transposing passes (about 1 MB): reading a column block
#: of a ``(K, n)`` matrix touches ``K`` pages per block, so short blocks thrash the TLB.
FUSED_BLOCK_ENTRIES = 4 * BLOCK_ENTRIES

#: Rows of a block in :func:`transpose` (a block of rows stays in cache while it is scattered).
TRANSPOSE_BLOCK = 128


def transpose(x: np.ndarray, *, out: np.ndarray | None = None) -> np.ndarray:
    """Return ``x.T`` as a C-contiguous float64 copy, copied in cache-sized row blocks.

    ``numpy.ascontiguousarray(x.T)`` walks one of the two matrices with a stride of
    a whole row; copying blocks of ``TRANSPOSE_BLOCK`` rows keeps both sides in cache.

    Parameters
    ----------
    x : numpy.ndarray
        ``(n, K)`` matrix.
    out : numpy.ndarray, optional
        ``(K, n)`` float64 buffer for the result (not sharing memory with ``x``).

    Returns
    -------
    numpy.ndarray
        ``(K, n)`` matrix.
    """
    n, k = x.shape
    if out is None:
        out = np.empty((k, n))
    for i in range(0, n, TRANSPOSE_BLOCK):
        out[:, i : i + TRANSPOSE_BLOCK] = x[i : i + TRANSPOSE_BLOCK].T
    return out


def softmax_t(z: np.ndarray) -> np.ndarray:
    """Return ``softmax(z).T`` as a C-contiguous ``(K, n)`` matrix, without an ``(n, K)`` one.

    Each block of rows is computed in a small scratch buffer by exactly the operations
    of :func:`softmax` (so every entry has the same bits) and scattered into the result
    while it is still in cache.

    Parameters
    ----------
    z : numpy.ndarray
        ``(n, K)`` scores.

    Returns
    -------
    numpy.ndarray
        ``(K, n)`` probabilities, one row per class.
    """
    n, k = z.shape
    out = np.empty((k, n))
    per = max(1, BLOCK_ENTRIES // max(k, 1))
    scratch = np.empty((min(per, n), k))
    for i in range(0, n, per):
        zb = z[i : i + per]
        e = scratch[: zb.shape[0]]
        np.subtract(zb, zb.max(axis=1, keepdims=True), out=e)
        np.exp(e, out=e)
        e /= e.sum(axis=1, keepdims=True)
        out[:, i : i + per] = e.T
    return out


def logistic_terms(eta: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Return the terms of a logistic loss at scores ``eta``, without overflow.

    With ``e = exp(-|η|)``: ``softplus(η) = max(η, 0) + log(1 + e)`` and
    ``σ(-|η|) = e / (1 + e)``; only ``exp`` and ``log`` are transcendental.

    Parameters
    ----------
    eta : numpy.ndarray
        Scores ``η`` (not modified).

    Returns
    -------
    abs_sum : numpy.ndarray
        ``Σ |η|`` along the last axis.
    log_sum : numpy.ndarray
        ``Σ log(1 + e)`` along the last axis.
    tail : numpy.ndarray
        ``σ(-|η|)``, a fresh array.
    curvature : numpy.ndarray
        ``e / (1 + e)² = q (1 - q)`` with ``q = σ(η)``, a fresh array.
    """
    e = np.abs(eta)
    abs_sum = e.sum(axis=-1)
    np.negative(e, out=e)
    np.exp(e, out=e)
    d = e + 1.0
    tail = e / d
    curvature = np.divide(tail, d, out=e)
    np.log(d, out=d)
    return abs_sum, d.sum(axis=-1), tail, curvature


def combine_classwise(
    new: np.ndarray, *, out: np.ndarray | None = None, clip: bool = False
) -> np.ndarray:
    """Transpose recalibrated ``(K, n)`` one-vs-rest scores to ``(n, K)`` rows that sum to 1.

    Each row is divided by its sum; a row whose entries are all 0 becomes uniform. The
    work is done one block of rows at a time (transpose, optional clip to [0, 1], sum,
    divide) so that a block is read from memory once.

    Parameters
    ----------
    new : numpy.ndarray
        ``(K, n)`` recalibrated scores.
    out : numpy.ndarray, optional
        ``(n, K)`` float64 buffer for the result (not sharing memory with ``new``).
    clip : bool, default False
        Clip the scores to [0, 1] first.

    Returns
    -------
    numpy.ndarray
        ``(n, K)`` probabilities.
    """
    k, n = new.shape
    if out is None:
        out = np.empty((n, k))
    per = max(1, FUSED_BLOCK_ENTRIES // k)
    for i in range(0, n, per):
        qb = out[i : i + per]
        qb[...] = new[:, i : i + per].T
        if clip:
            np.clip(qb, 0.0, 1.0, out=qb)
        total = qb.sum(axis=1, keepdims=True)
        zero = total[:, 0] <= 0
        qb /= np.where(total > 0, total, 1.0)
        if zero.any():
            qb[zero] = 1.0 / k
    return out


def combine_components(
    lens: str,
    new: np.ndarray,
    probs: np.ndarray,
    pred: np.ndarray | None,
    *,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """Turn recalibrated ``(C, n)`` component scores into a probability matrix (module docstring).

    ``out`` is an optional ``(n, K)`` buffer for the classwise result.
    """
    if lens == "binary":
        q = new[0]
        return np.column_stack([1.0 - q, q])
    if lens == "top-label":
        assert pred is not None
        n, k = probs.shape
        rows = np.arange(n)
        c_new = new[0]
        others = probs.copy()
        others[rows, pred] = 0.0
        rest = others.sum(axis=1)
        spread = (1.0 - c_new) / (k - 1)  # even share of the remaining mass
        safe = rest > 0
        scaled = np.where(
            safe[:, None], others * ((1.0 - c_new) / np.where(safe, rest, 1.0))[:, None], 0.0
        )
        scaled[~safe] = spread[~safe, None]
        scaled[rows, pred] = 0.0
        # keep the predicted class on top: mix towards the even share until no entry exceeds c'
        top = scaled.max(axis=1)
        over = (top > c_new) & (c_new >= spread)
        lam = np.ones(n)
        # a hair below equality, so ties cannot hand the argmax to another class
        lam[over] = (c_new[over] - spread[over]) / (top[over] - spread[over]) * (1.0 - 1e-9)
        out = lam[:, None] * scaled + (1.0 - lam)[:, None] * spread[:, None]
        out[rows, pred] = c_new
        return out
    return combine_classwise(new, out=out)


def register(
    name: str,
    *,
    label: str,
    description: str,
    formula: str,
    family: str,
    discrete_output: bool = False,
    accuracy_preserving: bool = False,
    selective: bool = False,
    min_rows_per_bin: int = 0,
    settings: tuple[Setting, ...] = (),
) -> Any:
    """Register a recalibrator class under ``name`` (and set its ``name``/``discrete_output``)."""

    def decorator(cls: type[Recalibrator]) -> type[Recalibrator]:
        cls.name = name
        cls.discrete_output = discrete_output
        RECALIBRATORS.register(
            name,
            label=label,
            description=description,
            formula=formula,
            family=family,
            discrete_output=discrete_output,
            accuracy_preserving=accuracy_preserving,
            selective=selective,
            min_rows_per_bin=min_rows_per_bin,
            settings=settings,
        )(cls)
        return cls

    return decorator


def make_recalibrator(name: str, **options: Any) -> Recalibrator:
    """Create a recalibrator by registry name.

    Parameters
    ----------
    name : str
        One of ``RECALIBRATORS.names()``, e.g. ``"platt"``, ``"histogram-umd"``.
    **options
        Options of that recalibrator (``n_bins``, ``lens``, ``mode``, ``alpha``,
        ``beta``, ``seed``, ...).

    Returns
    -------
    Recalibrator
        An unfitted recalibrator.

    Raises
    ------
    ConfigError
        For an unknown name or option.

    Examples
    --------
    >>> import numpy as np
    >>> r = make_recalibrator("platt").fit(np.array([0.2, 0.4, 0.6, 0.8]), [0, 1, 0, 1])
    >>> r.predict_proba(np.array([0.5])).shape
    (1, 2)
    """
    info = RECALIBRATORS.get(name)
    klass = info.func
    valid = list(info.options)
    unknown = sorted(set(options) - set(valid))
    if unknown:
        raise ConfigError(
            f"Unknown option(s) {', '.join(map(repr, unknown))} for recalibrator {name!r}; "
            f"valid options: {', '.join(valid)}."
        )
    return klass(**options)
