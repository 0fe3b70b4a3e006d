"""SQL as a source: a DuckDB query (or relation) gives the numbers and messages of its rows' file."""

from __future__ import annotations

import gc
import glob
import json
import os
import tempfile

import duckdb
import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose

from core.analyses.analysis import AnalysisConfig, analyze
from core.base.errors import ConfigError, DataError
from core.cli import main
from core.data.limits import LoadLimits
from core.data.loader import load_predictions
from core.data.sql import Query
from core.stream.analysis import analyze_stream

CONFIG = AnalysisConfig(n_resamples=0)
EXACT = 1e-12


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> tuple[str, pd.DataFrame]:
    rng = np.random.default_rng(11)
    n = 3_000
    p = rng.beta(2, 3, n)
    frame = pd.DataFrame(
        {
            "p": p,
            "label": (rng.random(n) < p).astype(np.int64),
            "model": np.where(rng.random(n) < 0.5, "a", "b"),
            "day": np.where(np.arange(n) < 1_800, "2026-10-31", "2026-11-01"),
        }
    )
    folder = tmp_path_factory.mktemp("logs")
    for i, lo in enumerate(range(0, n, 1_000)):
        frame.iloc[lo : lo + 1_000].to_parquet(folder / f"part-{i}.parquet", index=False)
    return str(folder / "*.parquet"), frame


def _values(a) -> np.ndarray:
    return a.metrics["value"].to_numpy(dtype=float)


def test_a_query_gives_the_numbers_and_digest_of_its_rows(logs):
    pattern, frame = logs
    query = Query(f"SELECT p, label FROM read_parquet('{pattern}') WHERE day >= '2026-11-01'")
    chosen = frame.loc[frame["day"] >= "2026-11-01", ["p", "label"]].reset_index(drop=True)
    direct = load_predictions(chosen)
    memory = load_predictions(query)
    assert memory.source == "the SQL query" and memory.probs.shape == (1_200, 2)
    assert memory.digest == direct.digest
    stream = analyze_stream(query, CONFIG)
    assert stream.input.source == "the SQL query" and stream.input.digest == direct.digest
    expected = _values(analyze(direct, CONFIG))
    assert_allclose(_values(analyze(memory, CONFIG)), expected, rtol=EXACT, atol=EXACT)
    assert_allclose(_values(stream.analysis), expected, rtol=EXACT, atol=EXACT)


def test_a_relation_is_a_source_too(logs):
    pattern, frame = logs
    con = duckdb.connect()
    rel = con.sql(f"SELECT p, label, model FROM read_parquet('{pattern}') ORDER BY model, p")
    pred = load_predictions(rel)
    assert pred.source == "the SQL query" and pred.models == ("a", "b")
    expected = frame.sort_values(["model", "p"], kind="stable")
    assert_allclose(pred.probs[:, 1], expected["p"].to_numpy(), rtol=0, atol=0)
    stream = analyze_stream(Query(relation=rel), CONFIG)
    assert stream.input.models == ("a", "b")


def test_decimal_literals_are_read_as_numbers():
    pred = load_predictions(Query("SELECT 0.25 AS p, 0 AS label UNION ALL SELECT 0.75, 1"))
    assert pred.probs[:, 1].tolist() == [0.25, 0.75]


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("SELEC p FROM t", r"^The SQL query fails: Parser Error: syntax error"),
        ("SELECT * FROM no_such_table", r"^The SQL query fails: Catalog Error"),
        ("COPY (SELECT 1) TO 'x.csv'", r"must be one SELECT query \(it holds COPY\)"),
        ("SELECT 1; SELECT 2", r"must be one SELECT query \(it holds SELECT, SELECT\)"),
        ("SELECT 0.5 AS p, 1 AS label WHERE false", r"^the SQL query has no data rows\.$"),
    ],
)
def test_a_bad_query_is_one_clear_error(sql, message):
    with pytest.raises(DataError, match=message):
        load_predictions(Query(sql))


def test_a_query_is_named_by_its_row_in_the_stream(logs, tmp_path):
    pattern, frame = logs
    bad = frame.iloc[:500, :2].copy()
    bad.loc[246, "p"] = np.nan
    bad.to_parquet(tmp_path / "bad.parquet", index=False)
    query = Query(f"SELECT * FROM '{tmp_path / 'bad.parquet'}'")
    with pytest.raises(DataError, match=r"^the SQL query, row 246 of its result: 1 of this bat"):
        analyze_stream(query, CONFIG)


def test_the_memory_limit_counts_a_querys_rows(logs):
    pattern, _ = logs
    with pytest.raises(DataError, match=r"^the SQL query has more than 100 rows, more than the in"):
        load_predictions(
            Query(f"SELECT * FROM read_parquet('{pattern}')"), limits=LoadLimits(max_rows=100)
        )


def test_the_scratch_folder_goes_with_the_result(logs):
    pattern, _ = logs
    before = set(glob.glob(os.path.join(tempfile.gettempdir(), "calibscope-sql-*")))
    load_predictions(Query(f"SELECT p, label FROM read_parquet('{pattern}')"))
    analyze_stream(Query(f"SELECT p, label FROM read_parquet('{pattern}')"), CONFIG)
    gc.collect()
    assert set(glob.glob(os.path.join(tempfile.gettempdir(), "calibscope-sql-*"))) == before


def test_a_query_needs_text_or_a_relation():
    with pytest.raises(ConfigError):
        Query()
    with pytest.raises(ConfigError):
        Query("  ")


def test_the_command_line_reads_sql(logs, tmp_path, capsys):
    pattern, frame = logs
    sql = f"SELECT p, label FROM read_parquet('{pattern}') WHERE day >= '2026-11-01'"
    out = {}
    for engine in ("memory", "stream"):
        path = tmp_path / f"{engine}.json"
        assert (
            main(
                [
                    "metrics",
                    "--sql",
                    sql,
                    "--engine",
                    engine,
                    "--resamples",
                    "0",
                    "--json",
                    "-o",
                    str(path),
                ]
            )
            == 0
        )
        out[engine] = json.loads(path.read_text())
    assert out["memory"]["input"]["file"] == sql and out["memory"]["input"]["n"] == 1_200
    assert out["memory"]["input"]["digest"] == out["stream"]["input"]["digest"]
    assert main(["metrics", "x.csv", "--sql", sql]) == 2
    assert main(["metrics", "--sql", sql, "--engine", "dask"]) == 2
    assert main(["metrics", "--sql", "DROP TABLE t"]) == 2
    assert main(["metrics"]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert err == [
        "calibscope: error: Give FILE or --sql, not both.",
        "calibscope: error: The Dask engine reads Parquet datasets, not SQL queries; run the query "
        "in memory or with the stream engine (--engine stream).",
        "calibscope: error: The SQL query must be one SELECT query (it holds DROP); a statement "
        "that writes or changes something is not run.",
        "calibscope: error: Give the predictions: FILE (or several), or --sql QUERY.",
    ]
