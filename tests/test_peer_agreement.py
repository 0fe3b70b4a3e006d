"""Agreement with peer libraries where their conventions match ours.

uncertainty-calibration (import name ``calibration``) is Kumar et al.'s reference code
(p-lambda/verified_calibration, PyPI 0.1.4). Its ``get_ece`` is the top-label ℓ1 ECE with
equal-width bins; its equal-mass bins are chunks of ⌈n/B⌉ sorted scores, which coincide
with our rank bins when B divides n, so its plug-in and debiased ℓ2 estimates must equal ours
there.
"""

from pathlib import Path

import numpy as np
import pytest

import core

cal = pytest.importorskip("calibration", reason="uncertainty-calibration is not installed")

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "cifar10-14-networks"


def _predictions(n: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, k)) * 2.0
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    labels = np.array(
        [rng.choice(k, p=row) for row in probs**1.5 / (probs**1.5).sum(1, keepdims=True)]
    )
    return probs, labels


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_top_label_ece_matches_get_ece(seed):
    probs, labels = _predictions(3000, 5, seed)
    ours = core.calibration_error(probs, labels, norm=1, n_bins=15, lens="top-label").value
    np.testing.assert_allclose(ours, cal.get_ece(probs, labels, num_bins=15), rtol=1e-12)


@pytest.mark.parametrize(("n", "n_bins"), [(3000, 15), (2000, 10), (990, 9)])
def test_equal_mass_plugin_and_debiased_match_when_bins_coincide(n, n_bins):
    probs, labels = _predictions(n, 4, n)
    conf = probs.max(axis=1)
    correct = (probs.argmax(axis=1) == labels).astype(float)
    binned = cal.bin(
        list(zip(conf, correct, strict=True)), cal.get_equal_bins(conf, num_bins=n_bins)
    )
    kw = {"norm": 2, "binning": "equal-mass", "tie_policy": "keep", "n_bins": n_bins}
    plugin = core.calibration_error(probs, labels, **kw).value
    debiased = core.calibration_error(probs, labels, estimator="debiased", **kw).value
    np.testing.assert_allclose(plugin, cal.plugin_ce(binned, power=2), rtol=1e-12)
    np.testing.assert_allclose(debiased, cal.unbiased_l2_ce(binned), rtol=1e-12)


@pytest.mark.data
def test_cifar_resnet18_matches_the_reference_code():
    if not DATA.is_dir():
        pytest.skip(f"CIFAR-10 predictions not found at {DATA}")
    pred = core.load_predictions(DATA / "resnet18.csv", labels=DATA / "labels.csv")
    probs, labels = pred.probs[:9990], pred.labels[:9990]  # 15 divides 9,990: the bins coincide
    conf = probs.max(axis=1)
    correct = (probs.argmax(axis=1) == labels).astype(float)
    binned = cal.bin(list(zip(conf, correct, strict=True)), cal.get_equal_bins(conf, num_bins=15))
    ours = core.calibration_error(
        probs, labels, estimator="debiased", norm=2, binning="equal-mass", tie_policy="keep"
    ).value
    np.testing.assert_allclose(ours, cal.unbiased_l2_ce(binned), rtol=1e-12)
    np.testing.assert_allclose(
        core.calibration_error(pred.probs, pred.labels, norm=1).value,
        cal.get_ece(pred.probs, pred.labels, num_bins=15),
        rtol=1e-12,
    )
