"""``--web-config-file`` (``streaming.sinks.web_config``): what it refuses, naming the key,
and the real exporter served with TLS, a client CA and basic auth, asked over real HTTPS."""

from __future__ import annotations

import base64
import ssl
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import bcrypt
import pytest

from streaming.sinks.prometheus import PrometheusSink
from streaming.sinks.web_config import WebConfigError, load_web_config
from tests.tls import Certs, make_certs

pytestmark = pytest.mark.unit

PASSWORD = "s3cret-scrape"


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("certs"))


def _hash(password: str, prefix: str = "$2b$") -> str:
    hashed = bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=4)).decode()
    return prefix + hashed[4:]


def write(folder: Path, text: str) -> Path:
    path = folder / "web.yml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("tls_server_config: {cert_file: server.pem}", "needs both cert_file and key_file"),
        ("tls_server_config: {cert_file: nope.pem, key_file: server.key}", "cert_file: "),
        (
            "tls_server_config: {cert_file: server.pem, key_file: client.key}",
            "cannot load cert_file",
        ),
        (
            "tls_server_config: {cert_file: server.pem, key_file: server.key, "
            "client_auth_type: RequireAndVerifyClientCert}",
            "client_ca_file: needed",
        ),
        (
            "tls_server_config: {cert_file: server.pem, key_file: server.key, "
            "client_auth_type: RequireAnyClientCert}",
            "'RequireAnyClientCert' is not supported",
        ),
        (
            "tls_server_config: {cert_file: server.pem, key_file: server.key, "
            "cipher_suites: [TLS_AES_128_GCM_SHA256]}",
            "tls_server_config.cipher_suites: not supported",
        ),
        (
            "tls_server_config: {cert_file: server.pem, key_file: server.key, min_version: TLS9}",
            "min_version: expected one of",
        ),
        (
            "basic_auth_users: {prometheus: plaintext}",
            "basic_auth_users.prometheus: expected a bcrypt",
        ),
        ("basic_auth_users: {prometheus: $2b$10$tooshort}", "not a valid bcrypt hash"),
        ("http_server_config: {http2: false}", "http_server_config: not supported"),
        ("tls_config: {}", "tls_config: unknown key"),
        ("- a list", "expected a mapping at the top"),
        ("a: [", "not valid YAML"),
    ],
)
def test_bad_web_configs_are_refused_naming_the_key(certs: Certs, text: str, message: str) -> None:
    path = write(certs.ca.parent, text)
    with pytest.raises(WebConfigError) as raised:
        load_web_config(path)
    assert str(raised.value).startswith(f"{path}: ")
    assert message in str(raised.value)


@pytest.fixture(scope="module")
def secured(certs: Certs) -> Iterator[int]:
    """The real exporter with TLS, a required client certificate and basic auth ($2y$)."""
    path = write(
        certs.ca.parent,
        f"""
tls_server_config:
  cert_file: {certs.server_cert.name}
  key_file: {certs.server_key.name}
  client_auth_type: RequireAndVerifyClientCert
  client_ca_file: {certs.ca.name}
basic_auth_users:
  prometheus: '{_hash(PASSWORD, "$2y$")}'
""",
    )
    sink = PrometheusSink()
    port = sink.start("127.0.0.1", 0, web_config=load_web_config(path))
    sink.record_batch(0.1, 7, 0, 1.0)
    try:
        yield port
    finally:
        sink.stop()


def _get(
    port: int, certs: Certs, *, user: str | None, password: str = PASSWORD, client: bool = True
) -> tuple[int, str]:
    context = ssl.create_default_context(cafile=str(certs.ca))
    if client:
        context.load_cert_chain(certs.client_cert, certs.client_key)
    request = urllib.request.Request(f"https://127.0.0.1:{port}/metrics")
    if user is not None:
        token = base64.b64encode(f"{user}:{password}".encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
    try:
        with urllib.request.urlopen(request, context=context, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("WWW-Authenticate", "")


def test_the_right_user_and_client_certificate_get_the_metrics(secured: int, certs: Certs) -> None:
    status, body = _get(secured, certs, user="prometheus")
    assert status == 200
    assert "rebalance_monitor_input_rows_total 7.0" in body
    assert _get(secured, certs, user="prometheus")[0] == 200  # the remembered check


@pytest.mark.parametrize(
    ("user", "password"), [(None, PASSWORD), ("prometheus", "wrong"), ("someone", PASSWORD)]
)
def test_no_or_wrong_credentials_get_401(
    secured: int, certs: Certs, user: str | None, password: str
) -> None:
    assert _get(secured, certs, user=user, password=password) == (401, 'Basic realm="metrics"')


def test_no_client_certificate_fails_the_handshake(secured: int, certs: Certs) -> None:
    with pytest.raises((ssl.SSLError, urllib.error.URLError, ConnectionError)):
        _get(secured, certs, user="prometheus", client=False)


def test_plain_http_gets_nothing(secured: int) -> None:
    with pytest.raises((urllib.error.URLError, ConnectionError, OSError)):
        urllib.request.urlopen(f"http://127.0.0.1:{secured}/metrics", timeout=5).read()
