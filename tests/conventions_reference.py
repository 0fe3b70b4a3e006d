"""The peer libraries' own values on the convention test cases (needs the libraries).

``python tests/conventions_reference.py`` rewrites ``tests/data/convention_values.json``,
the committed values that ``tests/test_conventions.py`` checks where a library is absent.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

FIXTURE = Path(__file__).with_name("data") / "convention_values.json"


def frac(x):
    return np.mod(x, 1.0)


def binary_fixture(n=2000):
    i = np.arange(1, n + 1, dtype=np.float64)
    p = 0.02 + 0.96 * frac(i * 0.6180339887498949)
    v = frac(i * 0.41421356237309515)
    t = 1.0 / (1.0 + np.exp(-(1.6 * np.log(p / (1.0 - p)) + 0.35)))
    return p, (v < t).astype(np.int64)


def multiclass_fixture(n=2000):
    i = np.arange(1, n + 1, dtype=np.float64)[:, None]
    c = np.array([0.6180339887498949, 0.41421356237309515, 0.7320508075688772, 0.2360679774997898])
    z = 3.0 * frac(i * c)

    def softmax(a):
        a = a - a.max(axis=1, keepdims=True)
        e = np.exp(a)
        return e / e.sum(axis=1, keepdims=True)

    P = softmax(z)
    onehot = (z == z.max(axis=1, keepdims=True)).astype(np.float64)
    Q = softmax(0.6 * z + 0.5 * onehot)
    w = frac(i[:, 0] * 0.5772156649015329)
    y = np.minimum((w[:, None] > np.cumsum(Q, axis=1)).sum(axis=1), 3).astype(np.int64)
    return P, y


EDGE_P = np.array([0.1, 0.1, 0.3, 0.3, 0.7, 0.7, 1.0, 1.0, 0.05, 0.95, 0.0, 0.2])
EDGE_Y = np.array([0, 1, 1, 0, 1, 1, 1, 0, 0, 1, 0, 0])


def datasets():
    """Name → (probs, labels): binary P(y=1) vectors and a 4-class matrix."""
    p, y = binary_fixture()
    P, Y = multiclass_fixture()
    ends = np.r_[p[:200], np.zeros(20), np.ones(30)]
    rounded = np.round(P, 2)  # two decimals; the last column takes what rounding moved
    rounded[:, -1] = 1.0 - rounded[:, :-1].sum(axis=1)
    return {
        "edge": (EDGE_P, EDGE_Y),
        "binary": (p, y),
        "binary-rounded": (np.round(p, 2), y),
        "binary-float32": (p.astype(np.float32).astype(np.float64), y),
        "binary-ends": (ends, np.r_[y[:200], np.zeros(20, int), np.ones(30, int)]),
        "multiclass": (P, Y),
        "multiclass-rounded": (rounded, Y),
    }


#: (convention, lens, estimator, norm, binning, n_bins) cases checked on every data set that
#: fits the lens.
CASES = [
    *[
        ("sklearn", lens, "plugin", 1.0, b, B)
        for lens in ("binary", "top-label")
        for b in ("equal-width", "equal-mass")
        for B in (10, 15, 50)
    ],
    *[
        ("netcal", lens, e, p, b, B)
        for lens in ("binary", "top-label")
        for (e, p) in (("plugin", 1.0), ("plugin", np.inf), ("average", 1.0))
        for b in ("equal-width",)
        for B in (10, 15, 50)
    ],
    *[("netcal", "binary", "plugin", 1.0, "equal-mass", B) for B in (10, 15)],
    *[
        ("torchmetrics", lens, "plugin", p, "equal-width", B)
        for lens in ("binary", "top-label")
        for p in (1.0, 2.0, np.inf)
        for B in (10, 15, 50)
    ],
    *[
        ("uncertainty-calibration", lens, e, p, b, B)
        for lens in ("binary", "top-label", "classwise")
        for (e, p) in (("plugin", 1.0), ("plugin", 2.0), ("debiased", 2.0))
        for b in ("equal-width", "equal-mass")
        for B in (10, 15)
    ],
    *[
        ("relplot", lens, "plugin", 1.0, "equal-width", B)
        for lens in ("binary", "top-label")
        for B in (10, 15, 50)
    ],
]


def fits(name: str, lens: str) -> bool:
    multi = name.startswith("multiclass")
    return (lens == "binary") != multi


def _top(P, Y):
    conf = P.max(axis=1)
    return conf, (P.argmax(axis=1) == Y).astype(np.int64)


def library_value(conv, lens, estimator, norm, binning, B, probs, labels):
    """The library's own value (float), computed by the library."""
    if conv == "sklearn":
        # calibration_curve returns the non-empty bins' means; weighted by their counts
        from sklearn.calibration import calibration_curve

        s, o = (probs, labels) if lens == "binary" else _top(probs, labels)
        strategy = "uniform" if binning == "equal-width" else "quantile"
        pt, pp = calibration_curve(o, s, n_bins=B, strategy=strategy)
        return pt, pp  # compared bin by bin
    if conv == "netcal":
        import netcal.metrics as nm

        cls = {("plugin", 1.0): nm.ECE, ("plugin", np.inf): nm.MCE, ("average", 1.0): nm.ACE}
        metric = cls[(estimator, norm)](bins=B, equal_intervals=binning == "equal-width")
        return float(metric.measure(probs, labels))
    if conv == "torchmetrics":
        import torch
        from torchmetrics.functional.classification import (
            binary_calibration_error,
            multiclass_calibration_error,
        )

        key = {1.0: "l1", 2.0: "l2", np.inf: "max"}[norm]
        if lens == "binary":
            return float(
                binary_calibration_error(
                    torch.tensor(probs), torch.tensor(labels), n_bins=B, norm=key
                )
            )
        return float(
            multiclass_calibration_error(
                torch.tensor(probs),
                torch.tensor(labels),
                num_classes=probs.shape[1],
                n_bins=B,
                norm=key,
            )
        )
    if conv == "uncertainty-calibration":
        import calibration as cal

        scheme = cal.get_equal_prob_bins if binning == "equal-width" else cal.get_equal_bins
        mode = "top-label" if lens == "top-label" else "marginal"
        return float(
            cal.lower_bound_scaling_ce(
                probs,
                labels,
                p=int(norm),
                debias=estimator == "debiased",
                num_bins=B,
                binning_scheme=scheme,
                mode=mode,
            )
        )
    if conv == "relplot":
        import relplot.metrics as rm

        s, o = (probs, labels) if lens == "binary" else _top(probs, labels)
        return float(rm.binnedECE(s, o, nbins=B))
    raise ValueError(conv)


def torch_float64_value(norm, B, probs, labels):
    """torchmetrics' multiclass binning (float32 confidences and edges), summed in float64."""
    import torch
    from torchmetrics.functional.classification.calibration_error import _ce_compute

    conf, correct = _top(probs, labels)
    conf32 = torch.tensor(conf).float()
    edges = torch.linspace(0, 1, B + 1, dtype=torch.float32).double()
    key = {1.0: "l1", 2.0: "l2", np.inf: "max"}[norm]
    return float(_ce_compute(conf32.double(), torch.tensor(correct).double(), edges, key))


def case_key(data, conv, lens, estimator, norm, binning, B):
    return f"{data}|{conv}|{lens}|{estimator}|{norm}|{binning}|{B}"


def generate():
    out = {}
    for data, (probs, labels) in datasets().items():
        for case in CASES:
            conv, lens, estimator, norm, binning, B = case
            if not fits(data, lens):
                continue
            key = case_key(data, *case)
            if conv == "sklearn":
                pt, pp = library_value(*case, probs, labels)
                out[key] = {"prob_true": pt.tolist(), "prob_pred": pp.tolist()}
            elif conv == "torchmetrics" and lens == "top-label":
                out[key] = {
                    "value": library_value(*case, probs, labels),
                    "float64_sums": torch_float64_value(norm, B, probs, labels),
                }
            else:
                try:
                    out[key] = {"value": library_value(*case, probs, labels)}
                except Exception as err:  # the library refuses this input
                    out[key] = {"error": type(err).__name__}
    return out


if __name__ == "__main__":
    FIXTURE.write_text(json.dumps(generate(), indent=0, sort_keys=True) + "\n")
    print(f"wrote {FIXTURE}")
