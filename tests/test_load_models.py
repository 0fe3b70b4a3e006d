"""Several models from several files with one labels file (core.data.load_models, the CLI)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from core import AnalysisConfig, DataError, analyze, load_models, load_predictions
from core.cli import main
from core.data.models import model_name

CIFAR = Path(__file__).resolve().parents[2] / "shared" / "data" / "cifar10-14-networks"


def _matrix(path: Path, probs: np.ndarray) -> Path:
    np.savetxt(path, probs, delimiter=",", fmt="%.17g")
    return path


@pytest.fixture
def review(tmp_path):
    rng = np.random.default_rng(4)
    labels = rng.integers(0, 3, 300)
    a = rng.dirichlet(np.ones(3), 300)
    b = 0.5 * a + 0.5 * np.eye(3)[labels]
    (tmp_path / "labels.csv").write_text("\n".join(map(str, labels)) + "\n")
    return {
        "labels": tmp_path / "labels.csv",
        "files": [_matrix(tmp_path / "alpha.csv", a), _matrix(tmp_path / "beta.csv.gz", b)],
        "probs": {"alpha": a, "beta": b},
        "y": labels,
        "dir": tmp_path,
    }


def test_each_file_is_one_model_named_after_it(review):
    pred = load_models(review["files"], labels=review["labels"])
    assert pred.models == ("alpha", "beta") and pred.n == 600
    for name, part in pred.by_model().items():
        np.testing.assert_allclose(part.probs, review["probs"][name], rtol=1e-15)
        np.testing.assert_array_equal(part.labels, review["y"])
        alone = load_predictions(
            review["files"][0 if name == "alpha" else 1], labels=review["labels"]
        )
        assert (
            analyze(part, AnalysisConfig(n_resamples=0)).headline.value
            == analyze(alone, AnalysisConfig(n_resamples=0)).headline.value
        )


def test_model_names():
    assert model_name("runs/densenet121.csv.gz") == "densenet121"
    assert model_name("x.parquet") == "x" and model_name(".csv") == ".csv"


def test_a_file_with_other_rows_is_named(review):
    short = _matrix(review["dir"] / "gamma.csv", review["probs"]["alpha"][:299])
    with pytest.raises(DataError, match=r"^gamma.csv: .*299") as err:
        load_models([*review["files"], short], labels=review["labels"])
    assert "\n" not in str(err.value)


def test_a_file_with_other_classes_is_named(tmp_path):
    (tmp_path / "alpha.csv").write_text("p_a,p_b,label\n0.2,0.8,b\n0.7,0.3,a\n")
    (tmp_path / "delta.csv").write_text("p_a,p_b,p_c,label\n0.2,0.5,0.3,b\n0.7,0.2,0.1,c\n")
    with pytest.raises(DataError, match="delta.csv has classes a, b, c but .*alpha.csv has"):
        load_models([tmp_path / "alpha.csv", tmp_path / "delta.csv"])


def test_two_files_with_one_name_are_refused(review, tmp_path):
    (tmp_path / "x").mkdir()
    twin = _matrix(tmp_path / "x" / "alpha.csv", review["probs"]["beta"])
    with pytest.raises(DataError, match="would both be model 'alpha'"):
        load_models([review["files"][0], twin], labels=review["labels"])


def test_cli_metrics_and_compare_take_several_files(review, capsys):
    files = list(map(str, review["files"]))
    assert (
        main(["metrics", *files, "--labels", str(review["labels"]), "--resamples", "0", "--json"])
        == 0
    )
    record = json.loads(capsys.readouterr().out)
    assert [r["model"] for r in record["results"]] == ["alpha", "beta"]
    assert record["input"]["file"] == " + ".join(files)
    assert main(["compare", *files, "--labels", str(review["labels"]), "--resamples", "20"]) == 0
    assert "beta" in capsys.readouterr().out
    assert main(["metrics", *files, "--labels", str(review["labels"]), "--engine", "stream"]) == 2
    assert "one dataset" in capsys.readouterr().err


@pytest.mark.data
def test_the_fourteen_cifar_networks_make_one_report(tmp_path):
    if not CIFAR.is_dir():
        pytest.skip(f"{CIFAR} is absent (the shared CIFAR-10 predictions)")
    files = sorted(str(p) for p in CIFAR.glob("*.csv") if p.name != "labels.csv")
    out = tmp_path / "cifar.json"
    args = ["report", *files, "--labels", str(CIFAR / "labels.csv"), "--resamples", "20"]
    assert main([*args, "--test", "none", "-o", str(out)]) == 0
    record = json.loads(out.read_text())
    assert len(record["results"]) == 14 == len(files)
    assert record["comparison"] is not None
