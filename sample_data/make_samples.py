"""Regenerate the bundled sample prediction files (deterministic, seeded).

Every row is an out-of-fold prediction: ``cross_val_predict`` with a seeded,
stratified 5-fold split, so each sample is predicted by a model that never saw
it. The data sets ship with scikit-learn (nothing is downloaded).

Run from the repository root::

    python -m sample_data.make_samples            # rewrite sample_data/*.csv
    python sample_data/make_samples.py --out DIR  # write elsewhere (tests compare bytes)
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

SEED = 20240531
N_FOLDS = 5
HERE = Path(__file__).resolve().parent
#: Printed precision of probabilities: 6 significant digits keeps files small and exact
#: to ~1e-6 (rows still sum to 1 within the loader's 1e-4 tolerance).
FLOAT_FORMAT = "%.6g"
DIGIT_NAMES = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")


def models(seed: int, multiclass: bool) -> dict[str, Callable[[], object]]:
    """Return the model factories, in file order, with the calibration shape each shows."""
    from sklearn.ensemble import (
        AdaBoostClassifier,
        GradientBoostingClassifier,
        RandomForestClassifier,
    )
    from sklearn.linear_model import LogisticRegression
    from sklearn.naive_bayes import GaussianNB
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.tree import DecisionTreeClassifier

    if multiclass:
        # SAMME's multiclass probabilities are a softmax of margins divided by K - 1, which
        # keeps them near 1/K whatever the margin; gradient boosting shows the boosting shape
        boosting = (
            "gradient-boosting",
            lambda: GradientBoostingClassifier(
                n_estimators=40,
                learning_rate=0.2,
                max_depth=2,
                max_features="sqrt",
                random_state=seed,
            ),
        )
    else:
        # boosting margins squashed into probabilities: sigmoid-shaped reliability curve
        boosting = (
            "adaboost",
            lambda: AdaBoostClassifier(
                DecisionTreeClassifier(max_depth=2, random_state=seed),
                n_estimators=100,
                random_state=seed,
            ),
        )
    return {
        # the independence assumption double-counts correlated features: over-confident
        "naive-bayes": lambda: GaussianNB(),
        # averaging many trees pulls scores towards the middle: under-confident
        "random-forest": lambda: RandomForestClassifier(
            n_estimators=100, min_samples_leaf=2, random_state=seed, n_jobs=1
        ),
        boosting[0]: boosting[1],
        # a proper scoring rule fitted directly: close to calibrated
        "logistic-regression": lambda: make_pipeline(
            StandardScaler(), LogisticRegression(C=1.0, max_iter=5000)
        ),
    }


def out_of_fold(X: np.ndarray, y: np.ndarray, seed: int, multiclass: bool) -> dict[str, np.ndarray]:
    """Return each model's out-of-fold ``predict_proba`` on ``(X, y)``."""
    from sklearn.model_selection import StratifiedKFold, cross_val_predict

    cv = StratifiedKFold(n_splits=N_FOLDS, shuffle=True, random_state=seed)
    return {
        name: cross_val_predict(make(), X, y, cv=cv, method="predict_proba")
        for name, make in models(seed, multiclass).items()
    }


def split_column(n: int, rng: np.random.Generator) -> np.ndarray:
    """Half the samples (at random) are ``calibration``, the rest ``test``."""
    split = np.full(n, "test", dtype=object)
    split[rng.permutation(n)[: n // 2]] = "calibration"
    return split


def binary_frame(seed: int = SEED) -> pd.DataFrame:
    """Breast cancer (569 tumours): P(malignant) of four models, one long table."""
    from sklearn.datasets import load_breast_cancer

    data = load_breast_cancer()
    X, malignant = data.data, (data.target == 0).astype(np.int64)  # target 0 = malignant
    n = malignant.size
    rng = np.random.default_rng(seed)
    split = split_column(n, rng)
    radius = X[:, list(data.feature_names).index("mean radius")]
    group = np.where(radius >= np.median(radius), "large", "small")
    parts = []
    for name, proba in out_of_fold(X, malignant, seed, False).items():
        parts.append(
            pd.DataFrame(
                {
                    "id": np.arange(n),
                    "model": name,
                    "split": split,
                    "group": group,
                    "label": malignant,
                    "p_malignant": proba[:, 1],
                }
            )
        )
    return pd.concat(parts, ignore_index=True)


def multiclass_frame(seed: int = SEED) -> pd.DataFrame:
    """Handwritten digits (1,797 images, K = 10): class probabilities of four models."""
    from sklearn.datasets import load_digits

    data = load_digits()
    X, y = data.data, data.target.astype(np.int64)
    n = y.size
    rng = np.random.default_rng(seed + 1)
    split = split_column(n, rng)
    words = np.array(DIGIT_NAMES, dtype=object)
    parts = []
    for name, proba in out_of_fold(X, y, seed, True).items():
        frame = pd.DataFrame({"id": np.arange(n), "model": name, "split": split, "label": words[y]})
        probs = pd.DataFrame(proba, columns=list(DIGIT_NAMES))
        parts.append(pd.concat([frame, probs], axis=1))
    return pd.concat(parts, ignore_index=True)


FILES: dict[str, Callable[[int], pd.DataFrame]] = {
    "binary_breast_cancer.csv": binary_frame,
    "multiclass_digits.csv": multiclass_frame,
}


def write_samples(out: Path = HERE, seed: int = SEED) -> list[Path]:
    """Write every sample file into ``out`` and return their paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for file_name, build in FILES.items():
        path = out / file_name
        build(seed).to_csv(path, index=False, float_format=FLOAT_FORMAT, lineterminator="\n")
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE, help="output folder (default: here)")
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args(argv)
    for path in write_samples(args.out, args.seed):
        print(f"wrote {path} ({path.stat().st_size / 1e6:.2f} MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
