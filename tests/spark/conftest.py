"""One local SparkSession for the Spark tier (real Spark, the pinned jars, Delta)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    from streaming.spark.session import build_session

    session = build_session("rebalance-monitor-tests", master="local[2]")
    try:
        yield session
    finally:
        session.stop()
