"""Fixtures shared by several test modules."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def client():
    """A client of a real Dask ``LocalCluster``: 2 worker processes of one thread each."""
    distributed = pytest.importorskip("dask.distributed", reason="the dask extra is not installed")
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as c,
    ):
        yield c
