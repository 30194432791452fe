"""Kill the job mid-stream, restart it from its checkpoint: the tables equal, row for row, those
of an uninterrupted run over the same backlog.

The interrupted run is the real CLI (``rebalance-monitor run --once``) in its own process,
with a small ``--max-offsets-per-trigger`` so the backlog takes several micro-batches; it is
killed with SIGKILL (no shutdown hook, no chance to finish a write) once a few batches are
in, then started again with the same arguments. The reference run is the same job,
uninterrupted, in the test session's Spark. Rows are compared for the backlog's groups (and
the membership topic's quarantine): the Spark sources' own consumers add records of their
own to ``__consumer_offsets`` between the runs.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from streaming.config import load_config
from streaming.sinks.tables import TABLE_NAMES

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from tests.spark.backlog import Backlog

pytestmark = [pytest.mark.spark, pytest.mark.integration, pytest.mark.slow]

MAX_OFFSETS = 100
KILL_AFTER = "[events] batch 2:"


def _settings(backlog: Backlog, work: Path) -> dict[str, Any]:
    return {
        "bootstrap_servers": backlog.bootstrap_servers,
        "membership_topic": backlog.membership_topic,
        "checkpoint_dir": str(work / "checkpoint"),
        "delta_path": str(work / "delta"),
        "metrics_port": 0,
        "max_offsets_per_trigger": MAX_OFFSETS,
    }


def _command(settings: dict[str, Any]) -> list[str]:
    return [
        str(Path(sys.executable).with_name("rebalance-monitor")),
        "run",
        "--once",
        "--master", "local[2]",
        "--conf", "spark.driver.memory=1g",
        "--bootstrap-server", settings["bootstrap_servers"],
        "--membership-topic", settings["membership_topic"],
        "--checkpoint-dir", settings["checkpoint_dir"],
        "--delta-path", settings["delta_path"],
        "--metrics-port", "0",
        "--max-offsets-per-trigger", str(MAX_OFFSETS),
    ]  # fmt: skip


def _rows(spark: SparkSession, delta: Path, backlog: Backlog) -> dict[str, list[str]]:
    """Table -> its rows of the backlog as sorted canonical JSON."""
    groups = set(backlog.groups)
    out: dict[str, list[str]] = {}
    for table in TABLE_NAMES:
        rows = spark.read.format("delta").load(str(delta / table)).collect()
        if table == "bad_records":
            mine = [r for r in rows if r.topic == backlog.membership_topic]
        else:
            mine = [r for r in rows if r.group_id in groups]
        out[table] = sorted(
            json.dumps(r.asDict(recursive=True), sort_keys=True, default=_plain) for r in mine
        )
    return out


def _plain(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray)):
        return value.hex()
    return str(value)


def test_killed_and_restarted_job_equals_an_uninterrupted_run(
    spark: SparkSession, backlog: Backlog, tmp_path: Path
) -> None:
    from streaming.job import run

    # the reference: one uninterrupted run
    reference = _settings(backlog, tmp_path / "reference")
    run(load_config(environ={}, overrides=reference), once=True, spark=spark, progress=print)

    # the same backlog, killed after a few batches ...
    interrupted = _settings(backlog, tmp_path / "interrupted")
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    proc = subprocess.Popen(
        _command(interrupted),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,
        text=True,
    )
    first: list[str] = []
    assert proc.stdout is not None
    deadline = time.monotonic() + 600
    for line in proc.stdout:
        first.append(line.rstrip())
        if line.startswith(KILL_AFTER) or time.monotonic() > deadline:
            break
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    assert any(line.startswith(KILL_AFTER) for line in first), "\n".join(first[-40:])
    assert proc.returncode == -signal.SIGKILL

    # ... and restarted from its checkpoint
    again = subprocess.run(
        _command(interrupted),
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
        check=False,
    )
    assert again.returncode == 0, again.stdout[-4000:] + again.stderr[-4000:]
    resumed = [line for line in again.stdout.splitlines() if line.startswith("[events] batch ")]
    assert resumed and not resumed[0].startswith("[events] batch 0:"), "started from scratch"

    expected = _rows(spark, tmp_path / "reference" / "delta", backlog)
    actual = _rows(spark, tmp_path / "interrupted" / "delta", backlog)
    assert expected["rebalance_events"], "the reference run wrote no rebalances"
    for table in TABLE_NAMES:
        assert len(actual[table]) == len(expected[table]), table
        assert actual[table] == expected[table], table
