"""``streaming.kafka_check``: the Java -> kafka-python option mapping (a table), and the check
against real sockets: a closed port, an unknown host, a TLS listener whose certificate is not
trusted, a listener that speaks no Kafka, and the watch's down/up transitions. The check
against a real broker is in ``tests/integration/test_fail_fast.py``."""

from __future__ import annotations

import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from streaming.kafka_check import (
    BrokerCheckError,
    BrokerWatch,
    check_broker,
    kafka_python_options,
)

pytestmark = pytest.mark.unit

JAAS = (
    "org.apache.kafka.common.security.scram.ScramLoginModule required "
    'username="monitor" password="s3\\"cret";'
)

# (Java settings, kafka-python options, unmapped)
MAPPING = [
    # 1. nothing: nothing
    ({}, {}, ()),
    # 2. SCRAM over TLS with a PEM truststore: every field has its equivalent
    (
        {
            "security.protocol": "sasl_ssl",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.jaas.config": JAAS,
            "ssl.truststore.location": "/etc/ca.pem",
            "ssl.truststore.type": "PEM",
        },
        {
            "security_protocol": "SASL_SSL",
            "sasl_mechanism": "SCRAM-SHA-512",
            "sasl_plain_username": "monitor",
            "sasl_plain_password": 's3"cret',
            "ssl_cafile": "/etc/ca.pem",
        },
        (),
    ),
    # 3. the kafka. prefix of Spark's options is dropped; a JKS store has no equivalent
    (
        {"kafka.security.protocol": "SSL", "kafka.ssl.truststore.location": "/etc/t.jks"},
        {"security_protocol": "SSL"},
        ("ssl.truststore.location",),
    ),
    # 4. a PEM keystore is the client certificate and key; hostname checks off
    (
        {
            "security.protocol": "SSL",
            "ssl.keystore.location": "/etc/client.pem",
            "ssl.keystore.type": "PEM",
            "ssl.key.password": "k",
            "ssl.endpoint.identification.algorithm": "",
        },
        {
            "security_protocol": "SSL",
            "ssl_certfile": "/etc/client.pem",
            "ssl_keyfile": "/etc/client.pem",
            "ssl_password": "k",
            "ssl_check_hostname": False,
        },
        (),
    ),
    # 5. SASL without a JAAS line (a JAAS file): the login cannot be checked from Python
    (
        {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"},
        {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN"},
        ("sasl.jaas.config",),
    ),
]


@pytest.mark.parametrize(("java", "python", "unmapped"), MAPPING)
def test_java_options_map_to_kafka_python(
    java: dict[str, str], python: dict[str, object], unmapped: tuple[str, ...]
) -> None:
    mapped = kafka_python_options(java)
    assert mapped.options == python
    assert mapped.unmapped == unmapped
    assert "s3" not in repr(mapped)  # the options stay out of repr


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_closed_port_is_connection_refused_at_once() -> None:
    port = _closed_port()
    started = time.monotonic()
    with pytest.raises(BrokerCheckError, match=f"^127.0.0.1:{port}: connection refused$"):
        check_broker(f"127.0.0.1:{port}", timeout_s=5)
    assert time.monotonic() - started < 2


def test_an_unknown_host_is_named() -> None:
    with pytest.raises(BrokerCheckError, match=r"^no-such-host\.invalid:9092: unknown host"):
        check_broker("no-such-host.invalid:9092", timeout_s=5)


def test_every_bootstrap_server_s_cause_is_in_the_message() -> None:
    port = _closed_port()
    with pytest.raises(BrokerCheckError) as raised:
        check_broker(f"nope.invalid:1,127.0.0.1:{port}", timeout_s=5)
    assert "nope.invalid:1: unknown host" in str(raised.value)
    assert f"127.0.0.1:{port}: connection refused" in str(raised.value)


@pytest.fixture
def listener() -> Iterator[tuple[socket.socket, int]]:
    """A listening socket that accepts and says nothing (closes after a second)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except (TimeoutError, OSError):
                continue
            threading.Timer(1.0, conn.close).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server, int(server.getsockname()[1])
    stop.set()
    thread.join()
    server.close()


def test_a_listener_that_speaks_no_kafka_is_reported_within_the_timeout(
    listener: tuple[socket.socket, int],
) -> None:
    _, port = listener
    started = time.monotonic()
    with pytest.raises(BrokerCheckError, match="gave no Kafka answer") as raised:
        check_broker(f"127.0.0.1:{port}", timeout_s=3)
    assert time.monotonic() - started < 10
    assert "security.protocol" in str(raised.value)


@pytest.fixture(scope="module")
def self_signed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=localhost", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    return cert, key


def test_an_untrusted_tls_certificate_is_a_failed_handshake(
    self_signed: tuple[Path, Path], listener: tuple[socket.socket, int]
) -> None:
    cert, key = self_signed
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)

    def serve() -> None:
        conn, _ = server.accept()
        try:
            with context.wrap_socket(conn, server_side=True):
                pass
        except (ssl.SSLError, OSError):
            pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        with pytest.raises(BrokerCheckError, match=r"TLS handshake failed: .*not trusted"):
            check_broker(f"127.0.0.1:{port}", {"security_protocol": "SSL"}, timeout_s=5)
    finally:
        thread.join(timeout=5)
        server.close()


def test_the_watch_reports_down_and_up_again() -> None:
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", 0))
    port = server.getsockname()[1]
    server.listen(8)
    changes: list[tuple[bool, str | None]] = []
    checks: list[bool] = []
    watch = BrokerWatch(
        f"127.0.0.1:{port}",
        {},
        lambda up, cause: changes.append((up, cause)),
        on_check=checks.append,
        interval_s=0.1,
        timeout_s=1,
        tcp_only=True,
    ).start()
    try:
        _wait(lambda: len(changes) == 1)
        server.close()
        _wait(lambda: len(changes) == 2)
        again = socket.socket()
        again.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        again.bind(("127.0.0.1", port))
        again.listen(8)
        _wait(lambda: len(changes) == 3)
        again.close()
    finally:
        watch.stop()
    assert changes == [
        (True, None),
        (False, f"127.0.0.1:{port}: connection refused"),
        (True, None),
    ]
    assert len(checks) >= 3 and False in checks


def _wait(condition: object, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


ENTRY = "import sys; from streaming.cli import main; sys.exit(main(sys.argv[1:]))"


@pytest.mark.parametrize("command", ["run", "collect"])
def test_an_unreachable_broker_exits_2_with_one_line_before_anything_starts(command: str) -> None:
    port = _closed_port()
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-c", ENTRY, command, "--bootstrap-server", f"127.0.0.1:{port}"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).resolve().parents[3],
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == (
        f"rebalance-monitor {command}: error: kafka: 127.0.0.1:{port}: connection refused"
    )
    assert "started:" not in proc.stdout
    assert time.monotonic() - started < 30
