"""The local broker secured (``kafka start --security scram+tls``: SCRAM-SHA-512 over TLS,
keystores by keytool) and the clients against it: the collector publishes and a kafka-python
reader with the mapped settings reads it back; a wrong password, an untrusted certificate and
a plaintext client each get their one-line error and exit 2, for ``collect`` and for ``run``
(before Spark starts); the simulator plays scenarios with kafka-python and Java members on it;
no password reaches the output, the members' logs or the broker's log."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from streaming.kafka_check import kafka_python_options
from streaming.kafka_local import BrokerInfo
from tests.tls import make_certs

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
ENTRY = "import sys; from streaming.cli import main; sys.exit(main(sys.argv[1:]))"


def cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", ENTRY, *argv],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )


def python_options(info: BrokerInfo, **changes: str) -> list[str]:
    """``collect --kafka-option`` flags for the broker's ``monitor`` user."""
    options = {**kafka_python_options(info.kafka_options).options, **changes}
    return [f for k, v in options.items() for f in ("--kafka-option", f"{k}={v}")]


def password(info: BrokerInfo) -> str:
    jaas = info.kafka_options["sasl.jaas.config"]
    return jaas.split('password="')[1].split('"')[0]


def test_the_broker_listens_only_with_sasl_ssl(secured_broker: BrokerInfo) -> None:
    props = secured_broker.properties_path.read_text()
    assert f"listeners=SECURED://{secured_broker.bootstrap_servers}," in props
    assert "SECURED:SASL_SSL" in props
    assert secured_broker.kafka_options["security.protocol"] == "SASL_SSL"
    security = secured_broker.folder / "security"
    for name in ("ca.p12", "broker.p12", "truststore.p12", "secrets.json"):
        assert (security / name).stat().st_mode & 0o077 == 0, name  # owner only


def test_the_collector_publishes_and_a_reader_reads_it_back(secured_broker: BrokerInfo) -> None:
    from kafka import KafkaConsumer

    topic = "secured.membership"
    proc = cli(
        "collect", "--once", "--bootstrap-server", secured_broker.bootstrap_servers,
        "--topic", topic, "--cluster", "secured", "--verbose", *python_options(secured_broker),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert password(secured_broker) not in proc.stdout + proc.stderr
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=secured_broker.bootstrap_servers,
        auto_offset_reset="earliest",
        consumer_timeout_ms=15_000,
        **kafka_python_options(secured_broker.kafka_options).options,
    )
    try:
        events = [json.loads(m.value) for m in consumer]
    finally:
        consumer.close()
    assert events and {e["cluster"] for e in events} == {"secured"}


def test_bad_client_settings_exit_2_with_their_cause(
    secured_broker: BrokerInfo, tmp_path: Path
) -> None:
    server = secured_broker.bootstrap_servers
    other_ca = make_certs(tmp_path / "certs").other_ca
    cases = [
        (python_options(secured_broker, sasl_plain_password="wrong"), "SASL authentication failed"),
        (
            python_options(secured_broker, ssl_cafile=str(other_ca)),
            "TLS handshake failed: the broker's certificate is not trusted",
        ),
        ([], "gave no Kafka answer"),  # plaintext
    ]
    for flags, cause in cases:
        proc = cli("collect", "--once", "--bootstrap-server", server, *flags,
                   "--broker-check-timeout", "15")  # fmt: skip
        assert proc.returncode == 2, (cause, proc.stderr[-2000:])
        line = proc.stderr.strip()
        assert "\n" not in line and "Traceback" not in line, line
        assert line.startswith(f"rebalance-monitor collect: error: kafka: {server}: "), line
        assert cause in line, line
        assert password(secured_broker) not in line


def test_run_checks_the_java_settings_before_spark(secured_broker: BrokerInfo) -> None:
    java = dict(secured_broker.kafka_options)
    java["sasl.jaas.config"] = java["sasl.jaas.config"].replace(password(secured_broker), "nope")
    flags = [f for k, v in java.items() for f in ("--kafka-option", f"{k}={v}")]
    proc = cli("run", "--bootstrap-server", secured_broker.bootstrap_servers, *flags,
               "--broker-check-timeout", "15")  # fmt: skip
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "SASL authentication failed" in proc.stderr
    assert "started:" not in proc.stdout


def test_the_simulator_plays_on_the_secured_broker(
    secured_broker: BrokerInfo, tmp_path: Path
) -> None:
    """The job's Java settings, in the job's environment variable: the admin client and the
    kafka-python members map them, the Java (KIP-848) members take them as they are."""
    import os

    env = {
        **os.environ,
        "REBALANCE_MONITOR_KAFKA_OPTIONS": json.dumps(secured_broker.kafka_options),
    }
    proc = subprocess.run(
        [sys.executable, "-c", ENTRY, "simulate", "graceful-leave", "kip848", "--json",
         "--bootstrap-server", secured_broker.bootstrap_servers, "--log-dir", str(tmp_path),
         "--timeout", "120"],
        capture_output=True, text=True, timeout=300, cwd=REPO, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, (proc.stdout[-3000:], proc.stderr[-2000:])
    results = [r for r in map(json.loads, proc.stdout.splitlines()) if r.get("type") == "result"]
    assert [r["scenario"] for r in results] == ["graceful-leave", "kip848"]
    assert all(r["ok"] for r in results), results
    secret = password(secured_broker)
    assert secret not in proc.stdout + proc.stderr
    logs = list(tmp_path.rglob("*"))
    assert not [p for p in logs if p.name == "client.properties"], "removed after the run"
    assert all(secret not in p.read_text(errors="replace") for p in logs if p.is_file())


def test_no_client_password_in_the_broker_s_log(secured_broker: BrokerInfo) -> None:
    logs = "".join(p.read_text(errors="replace") for p in secured_broker.log_path.parent.glob("*"))
    assert logs and password(secured_broker) not in logs
