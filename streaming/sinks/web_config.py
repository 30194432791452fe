"""The exporter's ``--web-config-file``, in the format of Prometheus' exporter-toolkit (the
file node_exporter and Prometheus itself take)::

    tls_server_config:
      cert_file: server.crt            # both or neither; paths relative to this file
      key_file: server.key
      client_auth_type: RequireAndVerifyClientCert   # or VerifyClientCertIfGiven,
      client_ca_file: ca.crt                         #    NoClientCert (the default)
      min_version: TLS12               # TLS10 .. TLS13 (default TLS12)
      max_version: TLS13
    basic_auth_users:                  # user: bcrypt hash (htpasswd -nBC 10 "" | tr -d ':')
      prometheus: $2y$10$...

What the toolkit has and this exporter does not (``cipher_suites``, ``curve_preferences``,
``prefer_server_cipher_suites``, ``http_server_config``, the client-auth types
``RequestClientCert`` and ``RequireAnyClientCert``, which Python's ``ssl`` cannot do) is
refused by name, as an unknown key is: a setting that would be ignored must not look
applied.

:func:`load_web_config` validates everything (files readable, certificate and key match,
hashes are bcrypt) and is called before Spark starts; :func:`serve` runs the WSGI app on
``host:port`` with TLS and basic auth as configured. Passwords are checked with ``bcrypt``
(a successful check is remembered by a SHA-256 of user and password, so a scrape every
few seconds does not pay bcrypt's cost each time, as exporter-toolkit does); an unknown user
costs a bcrypt check too, so timing does not tell users apart.

Exceptions::

    WebConfigError   (ValueError) the file is unreadable or invalid; the message names the key
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ssl
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streaming.errors import ConfigError

__all__ = ["WebConfig", "WebConfigError", "load_web_config", "serve"]

_TLS_KEYS = frozenset(
    {"cert_file", "key_file", "client_auth_type", "client_ca_file", "min_version", "max_version"}
)
_UNSUPPORTED_TLS = frozenset(
    {"cipher_suites", "curve_preferences", "prefer_server_cipher_suites", "client_allowed_sans"}
)
_TOP_KEYS = frozenset({"tls_server_config", "basic_auth_users"})
_CLIENT_AUTH = {
    "NoClientCert": ssl.CERT_NONE,
    "VerifyClientCertIfGiven": ssl.CERT_OPTIONAL,
    "RequireAndVerifyClientCert": ssl.CERT_REQUIRED,
}
_VERSIONS = {
    "TLS10": ssl.TLSVersion.TLSv1,
    "TLS11": ssl.TLSVersion.TLSv1_1,
    "TLS12": ssl.TLSVersion.TLSv1_2,
    "TLS13": ssl.TLSVersion.TLSv1_3,
}
_MAX_FILE_BYTES = 1024 * 1024
# any valid bcrypt hash: checked against when the user is unknown (same cost either way)
_DUMMY_HASH = b"$2b$10$4HbEqvfz8W4ZQ4RDs.DSDOHzdZkPSBHXVZy1mEEtcvyGcDdpv3Sp2"


class WebConfigError(ConfigError):
    """An invalid web config file; the message starts with the file and the key."""


@dataclass(frozen=True)
class WebConfig:
    """A loaded ``--web-config-file`` (module docstring)."""

    path: Path
    ssl_context: ssl.SSLContext | None = None
    users: Mapping[str, bytes] = field(default_factory=dict, repr=False)

    @property
    def scheme(self) -> str:
        return "https" if self.ssl_context is not None else "http"


def load_web_config(path: str | Path) -> WebConfig:
    """Read and validate ``path`` (module docstring); :class:`WebConfigError` names what is
    wrong."""
    import yaml

    path = Path(path).expanduser()
    try:
        with path.open("rb") as f:
            raw = f.read(_MAX_FILE_BYTES + 1)
        if len(raw) > _MAX_FILE_BYTES:
            raise WebConfigError(f"{path}: larger than 1 MiB, not a web config file")
        doc = yaml.safe_load(raw.decode("utf-8"))
    except OSError as e:
        raise WebConfigError(f"{path}: cannot read: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise WebConfigError(f"{path}: not UTF-8 text ({e.reason})") from None
    except yaml.YAMLError as e:
        raise WebConfigError(f"{path}: not valid YAML: {' '.join(str(e).split())}") from None
    if doc is None:
        doc = {}
    if not isinstance(doc, dict):
        raise WebConfigError(f"{path}: expected a mapping at the top")
    _no_unknown(path, "", doc, _TOP_KEYS, frozenset({"http_server_config"}))
    context = _tls(path, doc.get("tls_server_config"))
    users = _users(path, doc.get("basic_auth_users"))
    return WebConfig(path=path, ssl_context=context, users=users)


def _no_unknown(
    path: Path,
    where: str,
    doc: Mapping[str, Any],
    known: frozenset[str],
    unsupported: frozenset[str],
) -> None:
    for key in doc:
        name = f"{where}{key}"
        if key in unsupported:
            raise WebConfigError(f"{path}: {name}: not supported by this exporter")
        if key not in known:
            raise WebConfigError(f"{path}: {name}: unknown key (known: {', '.join(sorted(known))})")


def _file(path: Path, key: str, value: Any) -> Path:
    if not isinstance(value, str) or not value:
        raise WebConfigError(f"{path}: tls_server_config.{key}: expected a file path")
    resolved = (path.parent / value).expanduser()
    if not resolved.is_file():
        raise WebConfigError(f"{path}: tls_server_config.{key}: {resolved} is not a file")
    return resolved


def _tls(path: Path, tls: Any) -> ssl.SSLContext | None:
    if tls is None:
        return None
    if not isinstance(tls, dict):
        raise WebConfigError(f"{path}: tls_server_config: expected a mapping")
    _no_unknown(path, "tls_server_config.", tls, _TLS_KEYS, _UNSUPPORTED_TLS)
    if "cert_file" not in tls or "key_file" not in tls:
        raise WebConfigError(f"{path}: tls_server_config: needs both cert_file and key_file")
    cert = _file(path, "cert_file", tls["cert_file"])
    key = _file(path, "key_file", tls["key_file"])
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    for name, default, attr in (
        ("min_version", "TLS12", "minimum_version"),
        ("max_version", "TLS13", "maximum_version"),
    ):
        version = tls.get(name, default)
        if version not in _VERSIONS:
            raise WebConfigError(
                f"{path}: tls_server_config.{name}: expected one of {', '.join(_VERSIONS)}, "
                f"got {version!r}"
            )
        setattr(context, attr, _VERSIONS[version])
    try:
        context.load_cert_chain(cert, key)
    except (ssl.SSLError, OSError) as e:
        raise WebConfigError(
            f"{path}: tls_server_config: cannot load cert_file {cert} with key_file {key}: "
            f"{getattr(e, 'reason', None) or e}"
        ) from None
    auth = tls.get("client_auth_type", "NoClientCert")
    if auth not in _CLIENT_AUTH:
        supported = ", ".join(_CLIENT_AUTH)
        raise WebConfigError(
            f"{path}: tls_server_config.client_auth_type: {auth!r} is not supported "
            f"(supported: {supported})"
        )
    context.verify_mode = _CLIENT_AUTH[auth]
    ca = tls.get("client_ca_file")
    if context.verify_mode != ssl.CERT_NONE and ca is None:
        raise WebConfigError(
            f"{path}: tls_server_config.client_ca_file: needed with client_auth_type {auth}"
        )
    if ca is not None:
        ca_path = _file(path, "client_ca_file", ca)
        try:
            context.load_verify_locations(cafile=str(ca_path))
        except (ssl.SSLError, OSError) as e:
            raise WebConfigError(
                f"{path}: tls_server_config.client_ca_file: cannot load {ca_path}: {e}"
            ) from None
    return context


def _users(path: Path, users: Any) -> dict[str, bytes]:
    import bcrypt

    if users is None:
        return {}
    if not isinstance(users, dict):
        raise WebConfigError(f"{path}: basic_auth_users: expected a mapping of user: bcrypt hash")
    out: dict[str, bytes] = {}
    for user, hashed in users.items():
        where = f"{path}: basic_auth_users.{user}"
        if not isinstance(user, str) or not user or ":" in user:
            raise WebConfigError(f"{where}: not a user name")
        if not isinstance(hashed, str) or not hashed.startswith(("$2a$", "$2b$", "$2y$")):
            raise WebConfigError(f"{where}: expected a bcrypt hash ($2a$, $2b$ or $2y$)")
        try:
            bcrypt.checkpw(b"", hashed.encode())
        except ValueError:
            raise WebConfigError(f"{where}: not a valid bcrypt hash") from None
        out[user] = hashed.encode()
    return out


# -- serving -------------------------------------------------------------------------------

Wsgi = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class _BasicAuth:
    """WSGI middleware: 401 unless the request carries a listed user and its password."""

    def __init__(self, app: Wsgi, users: Mapping[str, bytes]) -> None:
        self.app, self.users = app, dict(users)
        self._ok: set[bytes] = set()
        self._lock = threading.Lock()

    def _allowed(self, header: str) -> bool:
        import bcrypt

        scheme, _, encoded = header.partition(" ")
        if scheme.lower() != "basic":
            return False
        try:
            user, sep, password = base64.b64decode(encoded, validate=True).decode().partition(":")
        except (ValueError, UnicodeDecodeError):
            return False
        if not sep:
            return False
        key = hashlib.sha256(f"{user}\0{password}".encode()).digest()
        with self._lock:
            if any(hmac.compare_digest(key, k) for k in self._ok):
                return True
        hashed = self.users.get(user)
        good = bcrypt.checkpw(password.encode(), hashed or _DUMMY_HASH) and hashed is not None
        if good:
            with self._lock:
                self._ok.add(key)
        return good

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        if self._allowed(environ.get("HTTP_AUTHORIZATION", "")):
            return self.app(environ, start_response)
        start_response(
            "401 Unauthorized",
            [("Content-Type", "text/plain"), ("WWW-Authenticate", 'Basic realm="metrics"')],
        )
        return [b"Unauthorized\n"]


def serve(
    app: Wsgi, host: str, port: int, config: WebConfig | None
) -> tuple[Any, threading.Thread]:
    """Serve ``app`` on ``host:port`` in a daemon thread with ``config``'s TLS and basic
    auth; returns the server (``server_port``, ``shutdown``) and its thread."""
    from wsgiref.simple_server import make_server

    from prometheus_client.exposition import (
        ThreadingWSGIServer,
        _get_best_family,
        _SilentHandler,
    )

    if config is not None and config.users:
        app = _BasicAuth(app, config.users)

    class Server(ThreadingWSGIServer):
        def handle_error(self, request: Any, client_address: Any) -> None:
            """A failed TLS handshake or a dropped connection: nothing to print."""

    # an IPv6 host needs an IPv6 socket (the server's default family is IPv4), as
    # prometheus_client's own server picks it
    Server.address_family, host = _get_best_family(host, port)  # type: ignore[no-untyped-call]

    server = make_server(host, port, app, Server, handler_class=_SilentHandler)
    if config is not None and config.ssl_context is not None:
        # the handshake on the first read, in the request's own thread: a client that never
        # completes it does not stop the server from accepting others
        server.socket = config.ssl_context.wrap_socket(
            server.socket, server_side=True, do_handshake_on_connect=False
        )
    thread = threading.Thread(target=server.serve_forever, name="metrics-http", daemon=True)
    thread.start()
    return server, thread
