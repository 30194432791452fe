"""Is the Kafka cluster there, and can we log in? Checked before anything starts, and
watched while the job runs.

::

    check_broker(servers, options, timeout_s)     before Spark (run, demo) or the collector
        │  per bootstrap server, until one answers:
        │    name lookup        -> "unknown host"
        │    TCP connect        -> "connection refused", "timed out", the OS's reason
        │    TLS handshake      -> "TLS handshake failed: <verify error>"  (SSL, SASL_SSL)
        │    kafka-python admin -> "SASL authentication failed: ...", "no Kafka answer ..."
        ▼                          (describe_cluster: a request after the login)
    BrokerCheckError (the one-line cause), or the cluster's broker count

    BrokerWatch                                   while the job runs: DescribeCluster on one
                                                  kept admin connection every ``interval_s``
                                                  (the check above names a failure's cause);
                                                  ``on_change(up, cause)``
                                                  on every change (the job prints a line,
                                                  sets ``rebalance_monitor_kafka_up``)

``options`` are kafka-python's keyword arguments (``security_protocol``, ``sasl_*``,
``ssl_*``), the collector's own. The job's Kafka options are the Java client's
(``security.protocol``, ``sasl.jaas.config``, ``ssl.truststore.location``):
:func:`kafka_python_options` maps them, the one place that does. A Java setting Python
cannot use (a JKS or PKCS12 store) is reported in ``unmapped``; the check then stops after
the TCP connection (what it cannot check, it does not claim).

kafka-python reports a failed login only in its log and then raises ``NoBrokersAvailable``
("Unable to bootstrap"); the check listens to the ``kafka`` logger while it runs and puts
the logged cause in the message.

Exceptions::

    BrokerCheckError   (ConnectionError) the cluster cannot be used: the message is the cause
"""

from __future__ import annotations

import contextlib
import logging
import re
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from streaming.errors import RebalanceMonitorError

__all__ = [
    "DEFAULT_CHECK_TIMEOUT_S",
    "BrokerCheckError",
    "BrokerWatch",
    "MappedOptions",
    "check_broker",
    "kafka_python_options",
]

#: How long the check before start may take by default (``--broker-check-timeout``).
DEFAULT_CHECK_TIMEOUT_S = 30.0
_SECURE = ("SSL", "SASL_SSL")
_SASL = ("SASL_PLAINTEXT", "SASL_SSL")
_TLS_WORDS = ("sslerror", "ssl:", "certificate", "handshake", "wrong version number")
_JAAS_FIELD = re.compile(r'\b(username|password)\s*=\s*"((?:[^"\\]|\\.)*)"')


class BrokerCheckError(RebalanceMonitorError, ConnectionError):
    """The cluster cannot be used; the message is the one-line cause."""

    label = "kafka"


# -- the Java client's settings -> kafka-python's ------------------------------------------


@dataclass(frozen=True)
class MappedOptions:
    """kafka-python keyword arguments, and the Java settings that have no equivalent."""

    options: dict[str, Any] = field(default_factory=dict, repr=False)
    unmapped: tuple[str, ...] = ()


def kafka_python_options(java: Mapping[str, str]) -> MappedOptions:
    """The Java Kafka client's security settings (without the ``kafka.`` prefix) as
    kafka-python's keyword arguments (module docstring). Settings that do not concern the
    connection (``client.id``, timeouts) are left out silently."""
    options: dict[str, Any] = {}
    unmapped: list[str] = []
    get = {k.removeprefix("kafka."): v for k, v in java.items()}.get
    if get("security.protocol"):
        options["security_protocol"] = str(get("security.protocol")).upper()
    if get("sasl.mechanism"):
        options["sasl_mechanism"] = str(get("sasl.mechanism")).upper()
    jaas = get("sasl.jaas.config")
    if jaas:
        found = {k: v.replace('\\"', '"') for k, v in _JAAS_FIELD.findall(jaas)}
        if "username" in found and "password" in found:
            options["sasl_plain_username"] = found["username"]
            options["sasl_plain_password"] = found["password"]
        else:
            unmapped.append("sasl.jaas.config")
    elif options.get("security_protocol") in _SASL and options.get("sasl_mechanism") in (
        None,
        "PLAIN",
        "SCRAM-SHA-256",
        "SCRAM-SHA-512",
    ):
        unmapped.append("sasl.jaas.config")  # the login is elsewhere (a JAAS file)
    if options.get("security_protocol") in _SASL:
        options.setdefault("sasl_mechanism", "GSSAPI")  # the Java client's default
    truststore = get("ssl.truststore.location")
    if truststore:
        if _is_pem(truststore, get("ssl.truststore.type")):
            options["ssl_cafile"] = truststore
        else:
            unmapped.append("ssl.truststore.location")
    keystore = get("ssl.keystore.location")
    if keystore:
        if _is_pem(keystore, get("ssl.keystore.type")):
            options["ssl_certfile"] = keystore
            options["ssl_keyfile"] = keystore
            if get("ssl.key.password"):
                options["ssl_password"] = get("ssl.key.password")
        else:
            unmapped.append("ssl.keystore.location")
    if get("ssl.endpoint.identification.algorithm") == "":
        options["ssl_check_hostname"] = False
    return MappedOptions(options, tuple(unmapped))


def _is_pem(path: str, store_type: str | None) -> bool:
    if store_type:
        return store_type.upper() == "PEM"
    return path.lower().endswith((".pem", ".crt", ".cer"))  # the Java default is JKS


# -- the check ---------------------------------------------------------------------------


def check_broker(
    servers: str | Sequence[str],
    options: Mapping[str, Any] | None = None,
    *,
    timeout_s: float = DEFAULT_CHECK_TIMEOUT_S,
    tcp_only: bool = False,
) -> int:
    """Raise :class:`BrokerCheckError` unless one of ``servers`` accepts a connection, a
    login with ``options`` (kafka-python's) and a DescribeCluster request, all within
    ``timeout_s``; returns how many brokers the cluster has. ``tcp_only``: stop after the
    TCP connection (options Python cannot use, see :func:`kafka_python_options`)."""
    listed = [s.strip() for s in servers.split(",")] if isinstance(servers, str) else servers
    opts = dict(options or {})
    deadline = time.monotonic() + timeout_s
    causes: list[str] = []
    for server in listed:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        try:
            _reach(server, opts, timeout_s=left, tls=not tcp_only)
            if tcp_only:
                return 0
            return _describe(server, opts, timeout_s=max(1.0, deadline - time.monotonic()))
        except BrokerCheckError as e:
            causes.append(str(e))
    if not causes:
        causes.append(f"{', '.join(listed)}: no answer within {timeout_s:g} s")
    raise BrokerCheckError("; ".join(causes))


def _reach(server: str, options: Mapping[str, Any], *, timeout_s: float, tls: bool) -> None:
    host, _, port_text = server.rpartition(":")
    host = host.strip("[]")
    try:
        port = int(port_text)
        socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except ValueError:
        raise BrokerCheckError(f"{server}: not host:port") from None
    except socket.gaierror as e:
        raise BrokerCheckError(f"{server}: unknown host ({e.strerror})") from None
    try:
        sock = socket.create_connection((host, port), timeout=timeout_s)
    except ConnectionRefusedError:
        raise BrokerCheckError(f"{server}: connection refused") from None
    except TimeoutError:
        raise BrokerCheckError(f"{server}: connection timed out after {timeout_s:.0f} s") from None
    except OSError as e:
        raise BrokerCheckError(f"{server}: cannot connect: {e.strerror or e}") from None
    with sock:
        if tls and str(options.get("security_protocol", "PLAINTEXT")).upper() in _SECURE:
            _handshake(sock, host, server, options)


def _handshake(sock: socket.socket, host: str, server: str, options: Mapping[str, Any]) -> None:
    try:
        context = ssl.create_default_context(cafile=options.get("ssl_cafile"))
        context.check_hostname = bool(options.get("ssl_check_hostname", True))
        if options.get("ssl_certfile"):
            context.load_cert_chain(
                options["ssl_certfile"], options.get("ssl_keyfile"), options.get("ssl_password")
            )
    except (OSError, ssl.SSLError) as e:
        raise BrokerCheckError(f"TLS settings: {_ssl_reason(e)}") from None
    try:
        with context.wrap_socket(sock, server_hostname=host) as tls:
            tls.do_handshake()
    except ssl.SSLCertVerificationError as e:
        raise BrokerCheckError(
            f"{server}: TLS handshake failed: the broker's certificate is not trusted "
            f"({e.verify_message})"
        ) from None
    except (ssl.SSLError, OSError) as e:
        raise BrokerCheckError(
            f"{server}: TLS handshake failed: {_ssl_reason(e)} (is the listener a TLS one?)"
        ) from None


def _ssl_reason(error: BaseException) -> str:
    reason = getattr(error, "reason", None) or getattr(error, "strerror", None)
    return str(reason or error or type(error).__name__)


class _Captured(logging.Handler):
    """kafka-python's warnings and errors while the check runs (module docstring)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.messages.append(record.getMessage())
        except Exception:  # a bad format string in someone's log call
            self.messages.append(str(record.msg))


@contextlib.contextmanager
def _kafka_log_captured() -> Iterator[_Captured]:
    """kafka-python's ``kafka`` logger into a :class:`_Captured` while the block runs (not
    to the terminal: a failed check has one line of its own)."""
    kafka_log = logging.getLogger("kafka")
    captured = _Captured()
    level, propagate = kafka_log.level, kafka_log.propagate
    kafka_log.addHandler(captured)
    kafka_log.setLevel(logging.WARNING)
    kafka_log.propagate = False
    try:
        yield captured
    finally:
        kafka_log.removeHandler(captured)
        kafka_log.setLevel(level)
        kafka_log.propagate = propagate


def _admin(servers: Sequence[str], options: Mapping[str, Any], *, timeout_s: float) -> Any:
    """A kafka-python admin client (connected and logged in: it bootstraps)."""
    from kafka import KafkaAdminClient

    timeout_ms = max(1000, int(timeout_s * 1000))
    return KafkaAdminClient(
        bootstrap_servers=list(servers),
        client_id="rebalance-monitor-check",
        request_timeout_ms=timeout_ms,
        bootstrap_timeout_ms=timeout_ms,
        reconnect_backoff_max_ms=1000,
        **options,
    )


def _admin_errors() -> tuple[type[BaseException], ...]:
    """What a failed admin call raises (kafka-python's own errors and the socket's)."""
    from kafka.errors import KafkaError

    return (KafkaError, OSError, ValueError, AssertionError)


def _describe(server: str, options: Mapping[str, Any], *, timeout_s: float) -> int:
    admin = None
    with _kafka_log_captured() as captured:
        try:
            admin = _admin([server], options, timeout_s=timeout_s)
            cluster = admin.describe_cluster()
            return len(cluster.get("brokers", []))
        except _admin_errors() as e:
            raise BrokerCheckError(_login_cause(server, e, captured.messages, options)) from None
        finally:
            if admin is not None:
                admin.close()


def _login_cause(
    server: str, error: BaseException, logged: list[str], options: Mapping[str, Any]
) -> str:
    texts = [f"{type(error).__name__}: {error}", *reversed(logged)]
    for text in texts:
        if "IllegalSaslState" in text or "UnsupportedSaslMechanism" in text:
            return (
                f"{server}: SASL authentication failed: the listener refused the SASL "
                f"handshake (is it a SASL listener with this mechanism?): {_one_line(text)}"
            )
    for text in texts:
        lowered = text.lower()
        if "authentication" in lowered or "sasl" in lowered or "credentials" in lowered:
            return f"{server}: SASL authentication failed: {_one_line(text)}"
    for text in texts:
        lowered = text.replace("KafkaSSLTransport", "").lower()
        if any(word in lowered for word in _TLS_WORDS):
            return f"{server}: TLS handshake failed: {_one_line(text)}"
    protocol = str(options.get("security_protocol", "PLAINTEXT")).upper()
    if protocol in _SASL:
        # kafka-python gave up before the broker's verdict came (a slow SCRAM exchange on a
        # busy broker), or the verdict was not logged: the login is what did not complete
        return (
            f"{server}: SASL authentication failed or got no answer in time: the TLS/TCP "
            f"connection works, the {options.get('sasl_mechanism', 'SASL')} login did not "
            f"complete ({_one_line(texts[0])})"
        )
    return (
        f"{server}: the broker accepted the connection but gave no Kafka answer "
        f"({_one_line(texts[0])}); does its listener expect another security.protocol "
        f"than {protocol}?"
    )


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= 300 else line[:297] + "..."


# -- watching ------------------------------------------------------------------------------


class BrokerWatch:
    """Checks the cluster every ``interval_s`` in a daemon thread and calls
    ``on_change(up, cause)`` when it goes down (``cause``: the one-line reason) or comes back
    (``cause``: None), the first result included; ``on_check(up)`` after every check.

    One admin client is kept open between checks: a check is a DescribeCluster request on
    its connection, not a new connection and login (with SASL, a new admin client per check
    would be a login every few seconds, all day). When that request fails, the client is closed and
    :func:`check_broker` names the cause; the next check opens a new one. With
    ``tcp_only`` every check is a TCP connection (no login to keep)."""

    def __init__(
        self,
        servers: str,
        options: Mapping[str, Any],
        on_change: Callable[[bool, str | None], None],
        *,
        on_check: Callable[[bool], None] | None = None,
        interval_s: float = 5.0,
        timeout_s: float = 5.0,
        tcp_only: bool = False,
    ) -> None:
        self._servers, self._options = servers, dict(options)
        self._on_change, self._on_check = on_change, on_check
        self._interval_s, self._timeout_s, self._tcp_only = interval_s, timeout_s, tcp_only
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="broker-watch", daemon=True)
        self._kept: Any = None  # the admin client kept between checks (class docstring)
        self.up: bool | None = None

    def start(self) -> BrokerWatch:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=self._timeout_s + 5)

    def _loop(self) -> None:
        try:
            while not self._stop.is_set():
                up, cause = self._check()
                if self._on_check is not None:
                    self._on_check(up)
                if up != self.up:
                    self.up = up
                    self._on_change(up, cause)
                self._stop.wait(self._interval_s)
        finally:
            self._close()

    def _check(self) -> tuple[bool, str | None]:
        """One check: over the kept admin client when there is one (class docstring)."""
        if not self._tcp_only:
            with _kafka_log_captured():
                try:
                    if self._kept is None:
                        servers = [s.strip() for s in self._servers.split(",")]
                        self._kept = _admin(servers, self._options, timeout_s=self._timeout_s)
                    self._kept.describe_cluster()
                    return True, None
                except _admin_errors():
                    self._close()
        try:
            check_broker(
                self._servers, self._options, timeout_s=self._timeout_s, tcp_only=self._tcp_only
            )
        except BrokerCheckError as e:
            return False, str(e)
        return True, None

    def _close(self) -> None:
        kept, self._kept = self._kept, None
        if kept is not None:
            with contextlib.suppress(Exception), _kafka_log_captured():
                kept.close()
