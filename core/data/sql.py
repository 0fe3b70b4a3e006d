"""Predictions given as a SQL query: DuckDB runs it, and its result is read as a Parquet file.

``calibscope metrics --sql "SELECT p, label, model FROM read_parquet('logs/*.parquet') WHERE
day >= '2026-11-01'"`` (and :class:`Query` in the API, or a DuckDB relation) analyses rows that
sit in files, or in any database DuckDB can attach, without exporting them first.

The query runs once, in a DuckDB connection of its own (threads as
:func:`core.base.parallel.thread_count`, a memory limit of :data:`MEMORY_LIMIT`, spilling to a
scratch folder), and DuckDB writes its result to a Parquet file in that folder. The memory
loader and the stream engine then read that file as they read any Parquet file, so a query
gets every check, limit and message a file gets, named ``the SQL query`` ("the SQL query,
row 246 of its result"); every pass of the stream reads the same rows in the same order,
whatever order the query would return them in on another run. The folder is removed when the
result is no longer used.

Only one ``SELECT`` (``WITH``, ``FROM``-first and ``VALUES`` queries included) is run: a
statement that writes or changes something (``COPY``, ``CREATE``, ``ATTACH`` ...) is refused
before it runs. ``DECIMAL`` columns (DuckDB's type of a literal such as ``0.25``) are read as
``DOUBLE``.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from typing import Any

from core.base.errors import ConfigError, DataError
from core.base.parallel import thread_count

__all__ = ["QUERY_NAME", "Query", "Result", "as_query", "run_query"]

#: How messages name a query's rows.
QUERY_NAME = "the SQL query"

_SENTENCE = QUERY_NAME[0].upper() + QUERY_NAME[1:]

#: DuckDB's memory while it runs a query (it spills to the scratch folder beyond this).
MEMORY_LIMIT = "512MB"


@dataclass(frozen=True)
class Query:
    """Predictions as a DuckDB SQL query, or as a DuckDB relation.

    Parameters
    ----------
    sql : str, optional
        One ``SELECT`` query, run in a fresh in-memory DuckDB connection (it may read files
        with ``read_parquet`` / ``read_csv`` or attach databases).
    relation : duckdb.DuckDBPyRelation, optional
        A relation of the caller's own connection (instead of ``sql``).
    """

    sql: str | None = None
    relation: Any = None

    def __post_init__(self) -> None:
        if (self.sql is None) == (self.relation is None):
            raise ConfigError("Give a Query either sql (a SELECT query) or a DuckDB relation.")
        if self.sql is not None and (not isinstance(self.sql, str) or not self.sql.strip()):
            raise ConfigError(f"sql must be a SELECT query; got {self.sql!r}.")

    def __str__(self) -> str:
        return self.sql if self.sql is not None else "a DuckDB relation"


def as_query(source: Any) -> Query | None:
    """Return ``source`` as a :class:`Query` (a Query, or a DuckDB relation), else None."""
    if isinstance(source, Query):
        return source
    kind = type(source)
    if kind.__module__.split(".")[0] == "duckdb" and kind.__name__ == "DuckDBPyRelation":
        return Query(relation=source)
    return None


@dataclass(frozen=True, eq=False)
class Result:
    """A query's result, written as a Parquet file in a scratch folder of its own.

    Attributes
    ----------
    path : str
        The Parquet file.
    rows : int
        Its rows.
    folder : tempfile.TemporaryDirectory
        The scratch folder, removed with this object.
    """

    path: str
    rows: int
    folder: Any


def run_query(query: Query, *, max_rows: int | None = None) -> Result:
    """Run a query once and write its result to a Parquet file.

    Parameters
    ----------
    query : Query
        The query or relation.
    max_rows : int, optional
        Write at most ``max_rows + 1`` rows (enough for the in-memory loader to refuse a
        result over its limit without writing all of it).

    Returns
    -------
    Result
        The file, its rows and the folder that holds it.

    Raises
    ------
    DataError
        For a query DuckDB cannot run (its message, first line), or one that is not a single
        ``SELECT``.
    ConfigError
        When DuckDB is not installed.
    """
    try:
        import duckdb
    except ImportError:  # pragma: no cover - duckdb is a dependency
        raise ConfigError("A SQL source needs DuckDB: pip install duckdb.") from None
    import pyarrow.parquet as pq

    try:
        if query.sql is not None:
            _check_select(duckdb, query.sql)
    except duckdb.Error as exc:
        raise DataError(f"{_SENTENCE} fails: {_first_line(exc)}") from None
    folder = tempfile.TemporaryDirectory(prefix="calibscope-sql-")
    path = os.path.join(folder.name, "result.parquet")
    try:
        if query.sql is not None:
            con = duckdb.connect(
                config={
                    "threads": thread_count(),
                    "memory_limit": MEMORY_LIMIT,
                    "temp_directory": os.path.join(folder.name, "spill"),
                }
            )
            rel = con.sql(query.sql)
        else:
            rel = query.relation
        rel = _readable(rel)
        if max_rows is not None:
            rel = rel.limit(max_rows + 1)
        rel.write_parquet(path)
    except duckdb.Error as exc:
        folder.cleanup()
        raise DataError(f"{_SENTENCE} fails: {_first_line(exc)}") from None
    return Result(path, int(pq.ParquetFile(path).metadata.num_rows), folder)


def _check_select(duckdb: Any, sql: str) -> None:
    statements = duckdb.extract_statements(sql)
    kinds = [s.type for s in statements]
    if len(kinds) != 1 or kinds[0] != duckdb.StatementType.SELECT:
        what = "no statement" if not kinds else ", ".join(k.name for k in kinds)
        raise DataError(
            f"{_SENTENCE} must be one SELECT query (it holds {what}); a statement "
            "that writes or changes something is not run."
        )


def _readable(rel: Any) -> Any:
    """Cast the relation's DECIMAL columns to DOUBLE (the loaders read numbers as floats)."""
    casts = []
    changed = False
    for name, kind in zip(rel.columns, rel.types, strict=True):
        quoted = '"' + str(name).replace('"', '""') + '"'
        if str(kind).upper().startswith("DECIMAL"):
            casts.append(f"CAST({quoted} AS DOUBLE) AS {quoted}")
            changed = True
        else:
            casts.append(quoted)
    return rel.project(", ".join(casts)) if changed else rel


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
