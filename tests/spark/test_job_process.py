"""``rebalance-monitor run`` as its own process, as a supervisor sees it: its exporter behind
TLS (client certificate) and basic auth answers ``/-/healthy`` and ``/-/ready`` (503 without
credentials is 401; other paths 404; ``/metrics`` has ``rebalance_monitor_build_info``); its
lines are JSON (``--log-format json``) with a time and a level; SIGTERM (``os.kill``) stops it
after the micro-batch in flight has finished, with exit 0, within the stop's bound."""

from __future__ import annotations

import base64
import json
import os
import signal
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import bcrypt
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from streaming.job import STOP_BATCH_WAIT_S
from streaming.kafka_local import BrokerInfo
from streaming.version import version
from tests.conftest import free_ports
from tests.tls import Certs, make_certs

pytestmark = [pytest.mark.spark, pytest.mark.integration, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
PASSWORD = "probe-s3cret"
COMMITS = 6000
PER_BATCH = 300
#: SIGTERM to exit: the batch in flight (at most STOP_BATCH_WAIT_S), then Spark's stop
STOP_BOUND_S = STOP_BATCH_WAIT_S + 30


def _commit_backlog(bootstrap: str, group: str, topic: str) -> None:
    """``COMMITS`` offset commits of ``group``: as many records in ``__consumer_offsets``."""
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    producer = KafkaProducer(bootstrap_servers=bootstrap)  # the topic, auto-created
    producer.send(topic, b"order", partition=0).get(timeout=60)
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    tp = TopicPartition(topic, 0)
    try:
        for offset in range(1, COMMITS + 1):
            consumer.commit({tp: OffsetAndMetadata(offset, "", -1)})
    finally:
        consumer.close()


def _web_config(folder: Path) -> tuple[Certs, Path]:
    certs = make_certs(folder / "certs")
    hashed = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(rounds=4)).decode()
    web = folder / "web.yml"
    tls = {
        "cert_file": str(certs.server_cert),
        "key_file": str(certs.server_key),
        "client_auth_type": "RequireAndVerifyClientCert",
        "client_ca_file": str(certs.ca),
    }
    web.write_text(yaml.safe_dump({"tls_server_config": tls, "basic_auth_users": {"ops": hashed}}))
    return certs, web


class Probe:
    """HTTPS requests to the job's exporter, with the client certificate."""

    def __init__(self, port: int, certs: Certs) -> None:
        self.port = port
        self.context = ssl.create_default_context(cafile=str(certs.ca))
        self.context.load_cert_chain(certs.client_cert, certs.client_key)

    def get(self, path: str, *, auth: bool = True) -> tuple[int, str]:
        request = urllib.request.Request(f"https://127.0.0.1:{self.port}{path}")
        if auth:
            token = base64.b64encode(f"ops:{PASSWORD}".encode()).decode()
            request.add_header("Authorization", f"Basic {token}")
        try:
            with urllib.request.urlopen(request, context=self.context, timeout=10) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()
        except (urllib.error.URLError, OSError) as e:
            return 0, str(e)  # not listening yet


class Job:
    """The process and its JSON lines, read by a thread."""

    def __init__(self, command: list[str]) -> None:
        env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
            env=env, start_new_session=True,
        )  # fmt: skip
        self.lines: list[tuple[float, str]] = []  # (monotonic, raw line)
        self.stderr: list[str] = []
        self._readers = [
            threading.Thread(target=self._read, daemon=True),
            threading.Thread(target=self._read_stderr, daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    def _read_stderr(self) -> None:
        self.stderr.extend(self.proc.stderr or ())

    def _read(self) -> None:
        for line in self.proc.stdout or ():
            self.lines.append((time.monotonic(), line))

    def messages(self) -> list[tuple[float, dict[str, Any]]]:
        return [(t, json.loads(line)) for t, line in list(self.lines)]

    def output(self) -> str:
        return "".join(line for _, line in self.lines)[-3000:] + "".join(self.stderr)[-3000:]

    def wait_for(self, what: str, condition: Callable[[], bool], timeout_s: float = 600) -> None:
        deadline = time.monotonic() + timeout_s
        while not condition():
            assert self.proc.poll() is None, f"the job exited before {what}:\n{self.output()}"
            assert time.monotonic() < deadline, f"no {what} in {timeout_s} s:\n{self.output()}"
            time.sleep(0.2)

    def said(self, prefix: str) -> list[tuple[float, dict[str, Any]]]:
        return [(t, m) for t, m in self.messages() if m["message"].startswith(prefix)]

    def end(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=60)
        for reader in self._readers:
            reader.join(timeout=30)


def _batch_id(message: str) -> int:
    return int(message.split()[2].rstrip(":"))


def _committed(checkpoint: Path) -> set[int]:
    return {int(p.name) for p in (checkpoint / "events" / "commits").glob("[0-9]*")}


def test_probes_json_lines_and_a_clean_stop_on_sigterm(
    kafka_broker: BrokerInfo, tmp_path: Path
) -> None:
    topic = f"probe-orders-{time.monotonic_ns()}"
    _commit_backlog(kafka_broker.bootstrap_servers, f"probe-group-{topic}", topic)
    certs, web = _web_config(tmp_path)
    (metrics_port,) = free_ports(1)
    checkpoint = tmp_path / "checkpoint"
    job = Job(
        [
            sys.executable, "-m", "streaming.cli", "run",
            "--master", "local[1]", "--conf", "spark.driver.memory=1g",
            "--bootstrap-server", kafka_broker.bootstrap_servers,
            "--checkpoint-dir", str(checkpoint), "--delta-path", str(tmp_path / "delta"),
            "--log-file", str(tmp_path / "run.log"),
            "--metrics-port", str(metrics_port), "--web-config-file", str(web),
            "--trigger-interval", "1", "--max-offsets-per-trigger", str(PER_BATCH),
            "--broker-watch-interval", "1", "--log-format", "json",
        ]
    )  # fmt: skip
    probe = Probe(metrics_port, certs)
    try:
        # the exporter starts before the query: healthy at once, ready once the job runs
        job.wait_for("/-/healthy", lambda: probe.get("/-/healthy")[0] == 200)
        assert probe.get("/-/healthy", auth=False)[0] == 401
        assert probe.get("/-/ready", auth=False)[0] == 401
        job.wait_for("the first micro-batch", lambda: bool(job.said("[events] batch ")), 900)
        job.wait_for("/-/ready", lambda: probe.get("/-/ready") == (200, "OK\n"))
        status, body = probe.get("/nothing-here")
        assert status == 404 and "rebalance_monitor" not in body
        status, metrics = probe.get("/metrics")
        assert status == 200
        [info] = [
            s.labels
            for family in text_string_to_metric_families(metrics)
            for s in family.samples
            if s.name == "rebalance_monitor_build_info" and s.value == 1
        ]
        assert info["version"] == version() and info["pyspark_version"].startswith("4.")

        # SIGTERM while the backlog's micro-batches run back to back: one is in flight
        time.sleep(0.5)
        signalled = time.monotonic()
        os.kill(job.proc.pid, signal.SIGTERM)
        code = job.proc.wait(timeout=STOP_BOUND_S + 60)
        took = time.monotonic() - signalled
    finally:
        job.end()
    assert code == 0, job.output()
    assert took < STOP_BOUND_S, f"the stop took {took:.1f} s"
    # every line is JSON with a UTC time and a level
    messages = [m for _, m in job.messages()]
    for m in messages:
        assert set(m) == {"ts", "level", "message"}
        when = datetime.strptime(m["ts"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
        assert abs((datetime.now(UTC) - when).total_seconds()) < 3600
        assert m["level"] in ("INFO", "WARNING")
    first = messages[0]["message"]
    assert first.startswith(f"rebalance-monitor run: rebalance-monitor {version()} (python ")
    # the stop went the Ctrl-C way, and the batch in flight at the signal finished first
    [(stopping_at, _)] = job.said("interrupted: stopping")
    finished = [_batch_id(m["message"]) for t, m in job.said("[events] batch ") if t > stopping_at]
    assert finished, "no micro-batch finished after the stop began:\n" + job.output()
    assert finished[-1] in _committed(checkpoint)
    assert job.said("stopped after ")
    assert not job.stderr or "failed" not in "".join(job.stderr), job.output()
