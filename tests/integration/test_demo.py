"""``rebalance-monitor demo`` as a newcomer runs it (``make demo``), on a terminal (a
pseudo-terminal here) and on ports and folders of its own: its own broker, the simulator
looping over the crash scenario, the collector and the job. While it runs, its exporter serves
the group's metrics and the table, redrawn in place, shows the group's rebalances by cause;
no line of Spark's log or of its Python workers reaches the screen (they go to
``spark.log``); at ``--duration`` it stops everything it started, broker included.

(The line-per-event output off a terminal is :mod:`tests.unit.streaming.test_demo_summary`'s.)"""

from __future__ import annotations

import re
import socket
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import free_ports
from tests.terminal import on_terminal

pytestmark = [
    pytest.mark.integration,
    pytest.mark.spark,
    pytest.mark.slow,
    pytest.mark.timeout(420),
]

#: a backstop: Ctrl-C ends the demo once a crash group's rebalance is on the table
DURATION_S = 240
#: What Spark's log4j lines, the JVM and the Python workers print (spark.log has them).
LOG_LINE = re.compile(
    r"\d\d/\d\d/\d\d \d\d:\d\d:\d\d (TRACE|DEBUG|INFO|WARN|ERROR)\b"
    r"|Python worker|log4j|setLogLevel|Using incubator modules|^\s+at [\w.$]+\(",
    re.MULTILINE,
)
#: A crash group's row once it rebalanced: its causes column counts them.
CRASH_ROW = re.compile(r"sim-\w+-crash\b[^\n]*\b(join|crash|leave) \d")


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def test_the_demo_on_a_terminal_shows_no_log_line_and_stops_what_it_started(
    tmp_path: Path,
) -> None:
    kafka_port, controller_port, metrics_port = free_ports(3)
    command = [
        str(Path(sys.executable).with_name("rebalance-monitor")),
        "demo",
        "--duration", str(DURATION_S),
        "--refresh", "2",
        "--kafka-port", str(kafka_port),
        "--kafka-controller-port", str(controller_port),
        "--kafka-folder", str(tmp_path / "kafka"),
        "--metrics-port", str(metrics_port),
        "--state-dir", str(tmp_path / "demo"),
        "--scenario", "crash",
    ]  # fmt: skip
    scraped = ""

    def on_output(recent: str) -> bool:
        nonlocal scraped
        if not scraped and CRASH_ROW.search(recent):
            # a crash group's rebalance is on the table: the exporter has it too
            with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics") as resp:
                scraped = resp.read().decode()
        return bool(scraped)  # then Ctrl-C

    returncode, screen = on_terminal(command, on_output)
    assert returncode == 0, screen[-6000:]
    assert "interrupted: stopping" in screen, screen[-6000:]
    # what it waited for, then the table
    for step in ("starting Spark", "first micro-batch", "rebalance-monitor demo — "):
        assert step in screen, step
    assert f"metrics: http://127.0.0.1:{metrics_port}/metrics" in screen
    leaked = [m.group(0) for m in LOG_LINE.finditer(screen)]
    assert not leaked, leaked[:10]
    # ... and they are in the log file instead
    spark_log = (tmp_path / "demo" / "spark.log").read_text(errors="replace")
    assert LOG_LINE.search(spark_log)
    # the stop inside a micro-batch ends the query as stopped (streaming.spark.stopping)
    assert "StackOverflowError" not in spark_log
    assert "kafka_consumergroup_rebalances_total{" in scraped, screen[-6000:]
    assert 'cause="crash"' in scraped or 'cause="join"' in scraped
    final = screen[screen.rindex("final summary") :]
    assert CRASH_ROW.search(final), final
    assert "?" not in final  # groups without coordinator records are no rows of "?"
    # everything the demo started is stopped: the broker's port is free again
    deadline = time.monotonic() + 30
    while _listening(kafka_port) and time.monotonic() < deadline:
        time.sleep(1)
    assert not _listening(kafka_port)
    assert not _listening(metrics_port)
    assert (tmp_path / "demo" / "delta" / "rebalance_events" / "_delta_log").is_dir()
