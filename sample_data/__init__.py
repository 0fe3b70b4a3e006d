"""Bundled sample prediction files and their catalog.

The files live next to this module in the repository (they are not part of the
installed ``core`` package): the dashboard and the tests run from the repository
root, where ``import sample_data`` finds them. ``make_samples.py`` regenerates
them byte for byte.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Sample:
    """One bundled sample file.

    Attributes
    ----------
    name : str
        Short name for pickers and URLs.
    path : pathlib.Path
        Absolute path of the CSV file.
    description : str
        One or two sentences for the picker.
    kind : {"binary", "multiclass"}
        Layout of the file.
    """

    name: str
    path: Path
    description: str
    kind: str


_SAMPLES = (
    Sample(
        "breast-cancer (binary)",
        HERE / "binary_breast_cancer.csv",
        "P(malignant) for 569 breast-cancer tumours from four models (naive Bayes: "
        "over-confident; random forest: under-confident; AdaBoost: sigmoid-shaped; logistic "
        "regression: close to calibrated), out-of-fold, with split and tumour-size group columns.",
        "binary",
    ),
    Sample(
        "digits (10 classes)",
        HERE / "multiclass_digits.csv",
        "Class probabilities for 1,797 handwritten digits (K = 10, columns zero..nine) from "
        "naive Bayes, random forest, gradient boosting and logistic regression, out-of-fold, "
        "with a split column.",
        "multiclass",
    ),
)


def catalog() -> dict[str, Sample]:
    """Return the bundled samples by name, in display order.

    Returns
    -------
    dict of str to Sample
        Only samples whose file exists.
    """
    return {s.name: s for s in _SAMPLES if s.path.is_file()}
