"""Where a Kafka client connects and how: :class:`KafkaConnection`, shared by the job, the
collector, the simulator (and its members) and the demo.

The security settings are kept as the Java client spells them (``security.protocol``,
``sasl.jaas.config``, ``ssl.truststore.location``: what Spark's Kafka source and the Java
members take), plus kafka-python keyword arguments given as such (``KAFKA_OPTION_KEYS``).
:meth:`KafkaConnection.kafka_python` maps the Java settings through
:func:`streaming.kafka_check.kafka_python_options`, the one mapping. ``repr`` and ``str`` mask
secrets. A child process gets the settings in a private ``.properties`` file
(:func:`write_properties`), never on its command line.

Errors are :class:`~streaming.errors.ConfigError` naming the setting.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from streaming.errors import ConfigError

__all__ = [
    "BOOL_OPTIONS",
    "DEFAULT_BOOTSTRAP_SERVERS",
    "JAVA_SECURITY_KEYS",
    "KAFKA_OPTION_KEYS",
    "OBJECT_OPTIONS",
    "PRODUCER_ONLY_OPTIONS",
    "KafkaConnection",
    "check_kafka_option",
    "is_host_port",
    "python_option_name",
    "read_properties",
    "string_map",
    "tuple_servers",
    "write_properties",
]

DEFAULT_BOOTSTRAP_SERVERS = "127.0.0.1:19092"  # streaming.kafka_local.DEFAULT_PORT
_SECRET_HINTS = ("password", "jaas", "secret", "token", "key")


def is_host_port(value: str) -> bool:
    """``host:port`` with a port in 1-65535."""
    host, sep, port = value.rpartition(":")
    return bool(sep and host and port.isdigit() and 0 < int(port) < 65536)


#: kafka-python keyword arguments a connection passes through to its clients: the security
#: settings. ``ssl_context``, ``sasl_oauth_token_provider`` and ``sasl_kerberos_name`` take
#: Python objects (Python API only, not ``--kafka-option``).
KAFKA_OPTION_KEYS: frozenset[str] = frozenset(
    {
        "security_protocol",
        "ssl_context",
        "ssl_check_hostname",
        "ssl_cafile",
        "ssl_certfile",
        "ssl_keyfile",
        "ssl_password",
        "ssl_crlfile",
        "ssl_ciphers",
        "sasl_mechanism",
        "sasl_plain_username",
        "sasl_plain_password",
        "sasl_kerberos_name",
        "sasl_kerberos_service_name",
        "sasl_kerberos_domain_name",
        "sasl_oauth_token_provider",
    }
)
#: The Java client's security settings a Python client can use too (mapped by
#: :func:`streaming.kafka_check.kafka_python_options`).
JAVA_SECURITY_KEYS: frozenset[str] = frozenset(
    {
        "security.protocol",
        "sasl.mechanism",
        "sasl.jaas.config",
        "ssl.truststore.location",
        "ssl.truststore.type",
        "ssl.keystore.location",
        "ssl.keystore.type",
        "ssl.key.password",
        "ssl.endpoint.identification.algorithm",
    }
)
OBJECT_OPTIONS = frozenset({"ssl_context", "sasl_oauth_token_provider", "sasl_kerberos_name"})
BOOL_OPTIONS = frozenset({"ssl_check_hostname"})
_SECRET_OPTIONS = frozenset({"ssl_password", "sasl_plain_password"})
#: kafka-python options ``KafkaAdminClient`` rejects.
PRODUCER_ONLY_OPTIONS = frozenset({"ssl_ciphers"})
_SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_SASL_MECHANISMS = ("PLAIN", "GSSAPI", "OAUTHBEARER", "SCRAM-SHA-256", "SCRAM-SHA-512")


def _is_secret(key: str) -> bool:
    return key in _SECRET_OPTIONS | OBJECT_OPTIONS or any(h in key.lower() for h in _SECRET_HINTS)


@dataclass(frozen=True)
class KafkaConnection:
    """Where a client connects, and how: what the job, the collector, the simulator and the
    audit share.

    * ``bootstrap_servers``: ``host:port`` entries (a comma-separated string is split).
    * ``options``: the Java client's settings (``security.protocol``, ``sasl.jaas.config``,
      ``ssl.truststore.location``...), without the ``kafka.`` prefix: what Spark's Kafka
      source and the Java members take.
    * ``python_options``: kafka-python keyword arguments given as such (``KAFKA_OPTION_KEYS``:
      ``sasl_plain_password``, ``ssl_cafile``, an ``ssl_context`` object...).

    ``repr`` and ``str`` show the servers and the option names with secrets masked.
    :class:`~streaming.errors.ConfigError` names what is invalid.
    """

    bootstrap_servers: tuple[str, ...] = (DEFAULT_BOOTSTRAP_SERVERS,)
    options: Mapping[str, str] = field(default_factory=dict)
    python_options: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        given: Any = self.bootstrap_servers
        servers = (
            tuple(s.strip() for s in given.split(","))
            if isinstance(given, str)
            else tuple(str(s).strip() for s in given)
        )
        if not servers or not all(is_host_port(s) for s in servers):
            raise ConfigError(
                f"bootstrap_servers: expected host:port[,host:port...], got {given!r}"
            )
        object.__setattr__(self, "bootstrap_servers", servers)
        given_options = string_map("kafka_options", self.options)
        options = {k.removeprefix("kafka."): v for k, v in given_options.items()}
        object.__setattr__(self, "options", MappingProxyType(options))
        python = dict(self.python_options)
        for key, value in python.items():
            check_kafka_option(key, value)
        object.__setattr__(self, "python_options", MappingProxyType(python))

    @classmethod
    def of(
        cls, bootstrap_servers: str | Sequence[str], options: Mapping[str, Any] | None = None
    ) -> KafkaConnection:
        """A connection from options in either spelling: kafka-python's keyword names
        (``KAFKA_OPTION_KEYS``, dots and dashes taken for underscores:
        ``security.protocol``) go to ``python_options``, the Java client's other settings
        to ``options``."""
        java: dict[str, str] = {}
        python: dict[str, Any] = {}
        for key, value in (options or {}).items():
            name = python_option_name(key)
            if name in KAFKA_OPTION_KEYS:
                python[name] = value
            else:
                java[key] = value
        return cls(tuple_servers(bootstrap_servers), java, python)

    @property
    def servers(self) -> str:
        """``host:port,host:port``."""
        return ",".join(self.bootstrap_servers)

    def mapped(self) -> tuple[dict[str, Any], tuple[str, ...]]:
        """kafka-python keyword arguments (the Java settings mapped, then
        ``python_options``), and the Java settings with no Python equivalent."""
        from streaming.kafka_check import kafka_python_options

        mapped = kafka_python_options(self.options)
        return {**mapped.options, **self.python_options}, mapped.unmapped

    def kafka_python(self) -> dict[str, Any]:
        """kafka-python keyword arguments of the security settings (:meth:`mapped`)."""
        return self.mapped()[0]

    def java(self) -> dict[str, str]:
        """The Java client's settings (Spark, Java members); kafka-python-only options
        (``python_options``) have no Java form here."""
        return dict(self.options)

    def redacted(self) -> dict[str, str]:
        """Every option, secrets and Python objects masked: for logs."""
        both = {**self.options, **self.python_options}
        return {k: "***" if _is_secret(k) else str(v) for k, v in sorted(both.items())}

    def __repr__(self) -> str:
        return f"KafkaConnection(bootstrap_servers={self.servers!r}, options={self.redacted()!r})"

    __str__ = __repr__


def write_properties(path: Path, options: Mapping[str, str]) -> Path:
    """``options`` as a Java ``.properties`` file, readable by its owner only (0600): how
    a child process (a simulated member, a Java tool) gets settings that must not be on its
    command line."""
    lines = [f"{_escape(k)}={_escape(v)}" for k, v in sorted(options.items())]
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    os.chmod(path, 0o600)
    return path


def read_properties(path: Path) -> dict[str, str]:
    """What :func:`write_properties` wrote (``key=value`` lines, ``#`` comments)."""
    out: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.lstrip().startswith(("#", "!")):
            continue
        key, _, value = line.partition("=")
        out[_unescape(key.strip())] = _unescape(value)
    return out


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _unescape(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text):
            out.append("\n" if text[i + 1] == "n" else text[i + 1])
            i += 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def tuple_servers(value: str | Sequence[str]) -> tuple[str, ...]:
    if isinstance(value, str):
        return tuple(s.strip() for s in value.split(","))
    return tuple(value)


def python_option_name(key: str) -> str:
    """``security.protocol`` / ``sasl-mechanism`` -> kafka-python's ``security_protocol``..."""
    return key.strip().lower().replace(".", "_").replace("-", "_")


def check_kafka_option(key: str, value: Any, where: str = "kafka_options") -> None:
    """A kafka-python keyword argument of a connection (``KAFKA_OPTION_KEYS``), or
    :class:`~streaming.errors.ConfigError` naming ``where`` and the key."""
    if key not in KAFKA_OPTION_KEYS:
        allowed = ", ".join(sorted(KAFKA_OPTION_KEYS))
        raise ConfigError(f"{where}: {key!r} is not a passthrough option (allowed: {allowed})")
    if key in OBJECT_OPTIONS:
        if value is None:
            raise ConfigError(f"{where}: {key} must not be None")
        return
    if key in BOOL_OPTIONS:
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: {key} must be true or false")
        return
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{where}: {key} must be a non-empty string")
    if key == "security_protocol" and value not in _SECURITY_PROTOCOLS:
        raise ConfigError(
            f"{where}: security_protocol must be one of {', '.join(_SECURITY_PROTOCOLS)}"
        )
    if key == "sasl_mechanism" and value not in _SASL_MECHANISMS:
        raise ConfigError(f"{where}: sasl_mechanism must be one of {', '.join(_SASL_MECHANISMS)}")


def string_map(name: str, value: Any, error: type[ConfigError] = ConfigError) -> dict[str, str]:
    """``value`` as a map of non-empty string keys to strings (numbers and booleans
    written out); ``error`` names ``name`` otherwise."""
    if not isinstance(value, Mapping):
        raise error(f"{name}: expected a mapping of KEY to VALUE")
    out: dict[str, str] = {}
    for key, item in value.items():
        if not isinstance(key, str) or not key.strip():
            raise error(f"{name}: keys must be non-empty strings, got {key!r}")
        if isinstance(item, bool):
            item = "true" if item else "false"
        elif isinstance(item, int | float):
            item = str(item)
        if not isinstance(item, str):
            raise error(f"{name}: {key} must be a string, number or boolean")
        out[key.strip()] = item
    return out
