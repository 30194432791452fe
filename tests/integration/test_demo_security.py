"""``rebalance-monitor demo --security scram+tls`` on a terminal (a pseudo-terminal here), on
ports and a broker folder of its own: the broker's only client listener is SASL_SSL (SCRAM
over TLS, keystores by keytool), so the job, the collector and the simulator all go through
it; the table shows the crash groups' rebalances by cause, a plaintext client gets no Kafka
answer on the broker's port while the demo runs, and none of the broker folder's secrets (the
SCRAM passwords, the keystores' password) reaches the screen, the demo's logs, the checkpoint,
the Delta tables or the broker's logs.

(The plaintext demo is :mod:`tests.integration.test_demo`'s; ``scram`` and ``tls`` alone are
the same code with fewer settings, and a run of the demo costs minutes.)"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from streaming.kafka_check import BrokerCheckError, check_broker, kafka_python_options
from streaming.kafka_security import client_options, ensure_material
from tests.conftest import free_ports
from tests.integration.test_demo import CRASH_ROW, LOG_LINE
from tests.listening import listening
from tests.terminal import on_terminal

pytestmark = [
    pytest.mark.integration,
    pytest.mark.spark,
    pytest.mark.slow,
    pytest.mark.timeout(720),
]

DURATION_S = 90  # from the first micro-batch; a batch can take a minute on a busy machine
MODE = "scram+tls"


def test_the_demo_on_a_scram_tls_broker_keeps_its_secrets(tmp_path: Path) -> None:
    kafka_port, controller_port, metrics_port = free_ports(3)
    folder = tmp_path / "kafka"  # fresh: a folder keeps the mode it was formatted for
    state = tmp_path / "demo"
    command = [
        str(Path(sys.executable).with_name("rebalance-monitor")),
        "demo",
        "--security", MODE,
        "--duration", str(DURATION_S),
        "--refresh", "2",
        "--kafka-port", str(kafka_port),
        "--kafka-controller-port", str(controller_port),
        "--kafka-folder", str(folder),
        "--metrics-port", str(metrics_port),
        "--state-dir", str(state),
        "--scenario", "crash",
    ]  # fmt: skip
    server = f"127.0.0.1:{kafka_port}"
    seen: dict[str, object] = {}

    def on_output(recent: str) -> None:
        if "sockets" in seen or not CRASH_ROW.search(recent):
            return
        # a crash group's rebalance is on the table: the broker serves the demo now
        pid = int((folder / "kafka.pid").read_text())
        seen["sockets"] = listening(pid)
        try:
            check_broker(server, {}, timeout_s=10)
        except BrokerCheckError as e:
            seen["plaintext"] = str(e)
        options = client_options(folder, MODE, ensure_material(folder, MODE, "java"))
        seen["brokers"] = check_broker(server, kafka_python_options(options).options, timeout_s=30)

    returncode, screen = on_terminal(command, on_output)
    assert returncode == 0, screen[-6000:]
    assert f"metrics: http://127.0.0.1:{metrics_port}/metrics" in screen
    final = screen[screen.rindex("final summary") :]
    assert CRASH_ROW.search(final), final
    assert not LOG_LINE.search(screen), screen[-6000:]

    # the broker's listeners: SASL_SSL for clients, the KRaft controller's, nothing else
    props = (folder / "server.properties").read_text()
    assert f"listeners=SECURED://{server},CONTROLLER://127.0.0.1:{controller_port}\n" in props
    assert "listener.security.protocol.map=CONTROLLER:PLAINTEXT,SECURED:SASL_SSL\n" in props
    assert seen.get("sockets") == {("127.0.0.1", kafka_port), ("127.0.0.1", controller_port)}, seen
    assert "gave no Kafka answer" in str(seen.get("plaintext")), seen  # plaintext: refused
    assert seen.get("brokers") == 1, seen  # the demo's own settings: answered

    # no secret anywhere the demo writes (its broker folder keeps them, 0600, by design)
    secrets = json.loads((folder / "security" / "secrets.json").read_text())
    assert set(secrets) == {"store", "admin", "client"}
    written = [p for p in [*state.rglob("*"), *(folder / "logs").rglob("*")] if p.is_file()]
    assert {p.name for p in written} >= {"spark.log", "job.log", "collector.log", "simulate.log"}
    assert any("_delta_log" in p.parts for p in written)
    assert any("checkpoint" in p.parts for p in written)
    # a scenario's members take their settings from a 0600 client.properties in its log
    # folder (not the command line), removed when the scenario ends; the demo's stop can
    # land inside a scenario and leave it: owner-only, never elsewhere
    configs = [p for p in written if p.name == "client.properties"]
    assert all(p.stat().st_mode & 0o077 == 0 and "members" in p.parts for p in configs), configs
    for name, secret in secrets.items():
        assert secret not in screen, name
        for path in written:
            if path not in configs:
                assert secret.encode() not in path.read_bytes(), (name, path)
    # the stop inside a micro-batch ends the query as stopped (streaming.spark.stopping)
    assert "StackOverflowError" not in (state / "spark.log").read_text(errors="replace")
