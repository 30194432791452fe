"""A stop that lands inside a micro-batch (:mod:`streaming.spark.stopping`): with the handler
guarded, a query stopped while its batch waits in a JVM call ends as stopped (Spark's status
``Stopped``, no exception), which it does not when the interrupted call's long traceback meets
Spark's regex (the ``StackOverflowError`` at the demo's stop); a batch that fails otherwise is
kept by the guard and reported by ``RunningJob.stop`` as a failure, on one line."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

from streaming.job import QueryFailedError, RunningJob
from streaming.spark.stopping import BatchGuard

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

pytestmark = [pytest.mark.spark]


def _query(spark: SparkSession, handler: Callable[[DataFrame, int], None], tmp: str) -> Any:
    return (
        spark.readStream.format("rate")
        .option("rowsPerSecond", 1)
        .load()
        .writeStream.foreachBatch(handler)
        .option("checkpointLocation", tmp)
        .trigger(processingTime="1 second")
        .start()
    )


def _wait(event: threading.Event, what: str) -> None:
    assert event.wait(120), f"no {what} within 120 s"


def test_a_stop_inside_a_batch_ends_the_query_as_stopped(
    spark: SparkSession, tmp_path: Any
) -> None:
    entered = threading.Event()

    def batch(df: DataFrame, batch_id: int) -> None:
        entered.set()
        # a JVM call on the stream thread (pinned threads), as the sinks' jobs and Delta
        # commits are: the stop interrupts it, with the stream thread's whole stack in its trace
        df.sparkSession._jvm.java.lang.Thread.sleep(120_000)  # type: ignore[union-attr]

    guard = BatchGuard(batch)
    query = _query(spark, guard, str(tmp_path / "checkpoint"))
    try:
        _wait(entered, "batch")
        time.sleep(1)
        guard.stop()
        query.stop()
    finally:
        if query.isActive:
            query.stop()
    assert not query.isActive
    assert query.exception() is None
    # Spark took the interrupt for the stop: the thread did not die of the regex first
    assert query.status["message"] == "Stopped", query.status
    assert guard.failure is None


def test_a_failing_batch_is_kept_and_reported_on_one_line(
    spark: SparkSession, tmp_path: Any
) -> None:
    def batch(df: DataFrame, batch_id: int) -> None:
        raise ValueError(f"table x: broken in batch {batch_id}\nsecond line")

    guard = BatchGuard(batch)
    query = _query(spark, guard, str(tmp_path / "checkpoint"))
    try:
        deadline = time.monotonic() + 120
        while query.isActive and time.monotonic() < deadline:
            time.sleep(0.5)
    finally:
        if query.isActive:
            query.stop()
    assert query.exception() is not None
    assert guard.failure == "batch 0: ValueError: table x: broken in batch 0"

    class Closed:
        def close(self) -> None:
            pass

    # Spark's own record aside (its thread may lose it), the guard's makes the stop fail
    job = RunningJob(config=None, sinks=Closed(), queries=[], guard=guard)  # type: ignore[arg-type]
    with pytest.raises(QueryFailedError, match=r"^query events failed: batch 0: ValueError"):
        job.stop()


class _Sinks:
    """What :class:`RunningJob` needs of its sinks: the exporter, and ``close``."""

    def __init__(self, prometheus: Any = None) -> None:
        self.prometheus = prometheus

    def close(self) -> None:
        pass


def test_the_stop_lets_the_batch_in_flight_finish(spark: SparkSession, tmp_path: Any) -> None:
    """``RunningJob.stop`` (SIGTERM and Ctrl-C end there): the micro-batch running when the
    stop comes completes and is committed; the query then ends as stopped."""
    from streaming.config import load_config

    entered = threading.Event()
    finished: list[int] = []

    def batch(df: DataFrame, batch_id: int) -> None:
        entered.set()
        df.sparkSession._jvm.java.lang.Thread.sleep(4_000)  # type: ignore[union-attr]
        finished.append(batch_id)

    guard = BatchGuard(batch)
    checkpoint = tmp_path / "checkpoint"
    query = _query(spark, guard, str(checkpoint))
    config = load_config(environ={}, overrides={"checkpoint_dir": str(tmp_path)})
    job = RunningJob(config, _Sinks(), [query], guard=guard)  # type: ignore[arg-type]
    try:
        _wait(entered, "batch")
        in_flight = int(query.status["isTriggerActive"])
        started = time.monotonic()
        job.stop()
        took = time.monotonic() - started
    finally:
        if query.isActive:
            query.stop()
    assert in_flight == 1
    assert finished, "the batch in flight was interrupted"
    committed = {int(p.name) for p in (checkpoint / "commits").glob("[0-9]*")}
    assert finished[0] in committed
    assert query.exception() is None and guard.failure is None
    assert took < 30, took


def test_not_ready_while_a_batch_is_stuck_beyond_the_bound(
    spark: SparkSession, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``/-/ready``'s answer (:meth:`RunningJob.not_ready`) for a real query whose first
    micro-batch hangs: ready within the bound, then not, naming the age and the bound; not
    ready once the query has stopped."""
    from streaming import job as job_module
    from streaming.config import load_config
    from streaming.sinks.prometheus import PrometheusSink

    monkeypatch.setattr(job_module, "READY_BATCH_AGE_S", 2.0)
    entered = threading.Event()

    def batch(df: DataFrame, batch_id: int) -> None:
        entered.set()
        df.sparkSession._jvm.java.lang.Thread.sleep(120_000)  # type: ignore[union-attr]

    guard = BatchGuard(batch)
    query = _query(spark, guard, str(tmp_path / "checkpoint"))
    config = load_config(
        environ={}, overrides={"checkpoint_dir": str(tmp_path), "trigger_interval_s": 0.5}
    )
    job = RunningJob(config, _Sinks(PrometheusSink()), [query], guard=guard)  # type: ignore[arg-type]
    try:
        _wait(entered, "batch")
        assert job.not_ready(now_s=job.started_s + 1) == []
        [reason] = job.not_ready(now_s=job.started_s + 5)
        assert reason == "no micro-batch yet after 5 s (bound 2 s)"
        job.sinks.prometheus.record_batch(1.0, 1, 0, job.started_s + 10)
        assert job.not_ready(now_s=job.started_s + 11) == []
        assert job.not_ready(now_s=job.started_s + 13) == ["last micro-batch after 3 s (bound 2 s)"]
        guard.stop()
        query.stop()
        assert job.not_ready() == [f"query {query.name} is not active"]
    finally:
        if query.isActive:
            query.stop()
