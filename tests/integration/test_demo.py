"""``rebalance-monitor demo`` as a newcomer runs it (``make demo``), on ports and folders of its
own: its own broker, the simulator looping over the crash scenario, the collector and the
job. While it runs, its exporter serves the group's metrics; the live summary shows the
group's rebalances; at ``--duration`` it stops everything it started, broker included."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import free_ports

pytestmark = [
    pytest.mark.integration,
    pytest.mark.spark,
    pytest.mark.slow,
    pytest.mark.timeout(420),
]

DURATION_S = 150


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def test_the_demo_runs_everything_and_stops_what_it_started(tmp_path: Path) -> None:
    kafka_port, controller_port, metrics_port = free_ports(3)
    command = [
        str(Path(sys.executable).with_name("rebalance-monitor")),
        "demo",
        "--duration", str(DURATION_S),
        "--refresh", "5",
        "--kafka-port", str(kafka_port),
        "--kafka-controller-port", str(controller_port),
        "--kafka-folder", str(tmp_path / "kafka"),
        "--metrics-port", str(metrics_port),
        "--state-dir", str(tmp_path / "demo"),
        "--scenario", "crash",
    ]  # fmt: skip
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    scraped = ""
    lines: list[str] = []
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append(line.rstrip())
        words = line.split()  # a summary row: group, strategy, gen, members, rebalances, ...
        if not scraped and words[:1] and words[0].endswith("-crash") and words[4:5] != ["0"]:
            # a crash group with a rebalance is on the summary: the exporter has it too
            with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics") as resp:
                scraped = resp.read().decode()
    proc.wait(timeout=120)
    out = "\n".join(lines)
    assert proc.returncode == 0, out[-6000:]
    assert f"metrics: http://127.0.0.1:{metrics_port}/metrics" in out
    assert "kafka_consumergroup_rebalances_total{" in scraped, out[-6000:]
    assert 'cause="crash"' in scraped or 'cause="join"' in scraped
    final = out[out.index("final summary") :]
    assert "-crash" in final
    # everything the demo started is stopped: the broker's port is free again
    deadline = time.monotonic() + 30
    while _listening(kafka_port) and time.monotonic() < deadline:
        time.sleep(1)
    assert not _listening(kafka_port)
    assert not _listening(metrics_port)
    assert (tmp_path / "demo" / "delta" / "rebalance_events" / "_delta_log").is_dir()
