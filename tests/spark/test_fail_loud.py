"""A failed streaming query never exits 0 (issue 15): ``rebalance-monitor run --once`` on a
checkpoint whose offset log is corrupt (its metadata file intact, so the query starts) fails
inside the query's own thread, after Spark started; the command exits 1 with the cause on
one line and the trace in ``--log-file``, where Spark's own lines went too."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from streaming.kafka_local import BrokerInfo

pytestmark = [pytest.mark.spark, pytest.mark.integration]

REPO = Path(__file__).resolve().parents[2]


def test_a_failed_query_exits_1_with_one_line_and_the_trace_in_the_log(
    kafka_broker: BrokerInfo, tmp_path: Path
) -> None:
    query_dir = tmp_path / "checkpoint" / "events"
    (query_dir / "offsets").mkdir(parents=True)
    (query_dir / "metadata").write_text(json.dumps({"id": str(uuid.uuid4())}) + "\n")
    (query_dir / "offsets" / "0").write_text("not an offset log\n")
    log = tmp_path / "run.log"
    proc = subprocess.run(
        [
            sys.executable, "-m", "streaming.cli", "run", "--once",
            "--master", "local[1]",
            "--bootstrap-server", kafka_broker.bootstrap_servers,
            "--checkpoint-dir", str(tmp_path / "checkpoint"),
            "--delta-path", str(tmp_path / "delta"),
            "--metrics-port", "0",
            "--log-file", str(log),
        ],
        capture_output=True, text=True, timeout=600, cwd=REPO,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "started:" in proc.stdout  # Spark did start: the failure is the query's
    # that one line is all of stderr: Spark's own lines (its JVM's log4j output, the query's
    # ERROR and stack) went to the log file (issue 16: the console)
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith("rebalance-monitor run: failed: query rebalance-monitor-events failed:")
    assert line.endswith(f"(trace in {log})")
    assert not any(" WARN " in x or " ERROR " in x for x in proc.stdout.splitlines())
    trace = log.read_text()
    assert "Traceback" in trace and "QueryFailedError" in trace
    assert " ERROR MicroBatchExecution" in trace  # Spark's log4j line of the failure
