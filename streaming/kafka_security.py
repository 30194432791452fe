"""The local broker's security (``rebalance-monitor kafka start --security MODE``): SCRAM
users, TLS keystores made with ``keytool``, and the client settings that go with them.

::

    mode        listener protocol   what start() makes in <folder>/security/
    plaintext   PLAINTEXT           nothing
    scram       SASL_PLAINTEXT      secrets.json (SCRAM-SHA-512 passwords of admin, monitor)
    tls         SSL                 ca.p12, ca.pem, broker.p12, truststore.p12, secrets.json
    scram+tls   SASL_SSL            both

The CA and the broker's key pair are made with the JDK's ``keytool`` (a CA with
``BasicConstraints``, the broker's certificate signed by it for ``127.0.0.1`` and
``localhost``); ``ca.pem`` is the CA for clients (Java with ``ssl.truststore.type=PEM``,
Python's ``ssl``). The SCRAM credentials are written at ``StorageTool format`` time
(``--add-scram``), so the broker folder's storage is formatted for one mode: a folder keeps
its mode (``security/mode``). The broker's own user, ``admin``, is also the inter-broker
login; clients get ``monitor``.

:func:`client_options` gives the Java client settings (what ``rebalance-monitor run
--kafka-option`` and Spark take); :func:`streaming.kafka_check.kafka_python_options` maps
them for kafka-python, the one place that does. They are also written to
``security/client.properties`` (mode 0600) for other tools.

Exceptions::

    SecurityError   (RuntimeError) keytool failed or missing, or the folder holds a broker of
                    another mode; :func:`streaming.kafka_local.start` raises it as StartupError
                    (a folder whose storage is formatted for another mode it refuses first:
                    :class:`streaming.kafka_local.FolderModeError`, exit 2)
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from streaming.errors import EXIT_FAILED, RebalanceMonitorError

__all__ = [
    "CLIENT_USER",
    "MECHANISM",
    "PROTOCOLS",
    "SECURITY_MODES",
    "Secrets",
    "broker_properties",
    "client_options",
    "ensure_material",
    "scram_format_args",
]

SECURITY_MODES: tuple[str, ...] = ("plaintext", "scram", "tls", "scram+tls")
PROTOCOLS: dict[str, str] = {
    "plaintext": "PLAINTEXT",
    "scram": "SASL_PLAINTEXT",
    "tls": "SSL",
    "scram+tls": "SASL_SSL",
}
MECHANISM = "SCRAM-SHA-512"
ADMIN_USER = "admin"
CLIENT_USER = "monitor"
LISTENER = "SECURED"
_SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"


class SecurityError(RebalanceMonitorError, RuntimeError):
    """The security material could not be made (keytool failed, a folder of another mode)."""

    exit_status = EXIT_FAILED


@dataclass(frozen=True)
class Secrets:
    """The generated passwords (never in ``repr``)."""

    store: str
    admin: str
    client: str

    def __repr__(self) -> str:
        return "Secrets(***)"


def uses_scram(mode: str) -> bool:
    return mode in ("scram", "scram+tls")


def uses_tls(mode: str) -> bool:
    return mode in ("tls", "scram+tls")


def _dir(folder: Path) -> Path:
    return folder / "security"


def ensure_material(folder: Path, mode: str, java: str) -> Secrets:
    """The secrets and keystores of ``mode`` under ``folder/security`` (made once, then
    reused); :class:`SecurityError` when the folder was made for another mode."""
    sec = _dir(folder)
    sec.mkdir(parents=True, exist_ok=True)
    os.chmod(sec, 0o700)
    mode_file = sec / "mode"
    if mode_file.exists() and mode_file.read_text().strip() != mode:
        raise SecurityError(
            f"{folder} holds a broker of security mode {mode_file.read_text().strip()!r}, "
            f"not {mode!r}: use another --dir (or delete this one)"
        )
    secrets_file = sec / "secrets.json"
    if secrets_file.exists():
        raw = json.loads(secrets_file.read_text())
        found = Secrets(raw["store"], raw["admin"], raw["client"])
    else:
        found = Secrets(*(secrets.token_urlsafe(18) for _ in range(3)))
        secrets_file.write_text(
            json.dumps({"store": found.store, "admin": found.admin, "client": found.client})
        )
        os.chmod(secrets_file, 0o600)
    if uses_tls(mode) and not (sec / "truststore.p12").exists():
        _keystores(sec, found.store, java)
    mode_file.write_text(mode + "\n")
    return found


def _keytool(java: str, *args: str) -> None:
    keytool = Path(java).with_name("keytool")
    binary = str(keytool) if keytool.exists() else shutil.which("keytool")
    if binary is None:
        raise SecurityError("keytool not found next to java nor on PATH (it comes with the JDK)")
    result = subprocess.run(
        [binary, *args], capture_output=True, text=True, timeout=120, check=False
    )
    if result.returncode != 0:
        raise SecurityError(f"keytool {args[0]} failed: {(result.stdout + result.stderr).strip()}")


def _keystores(sec: Path, password: str, java: str) -> None:
    ca, broker, trust = sec / "ca.p12", sec / "broker.p12", sec / "truststore.p12"
    for path in (ca, broker, trust, sec / "ca.pem", sec / "broker.csr", sec / "broker.crt"):
        path.unlink(missing_ok=True)
    store = ("-storetype", "PKCS12", "-storepass", password)
    _keytool(java, "-genkeypair", "-alias", "ca", "-keyalg", "RSA", "-keysize", "2048",
             "-dname", "CN=rebalance-monitor local CA", "-ext", "bc:c", "-validity", "365",
             "-keystore", str(ca), *store)  # fmt: skip
    _keytool(java, "-exportcert", "-alias", "ca", "-rfc", "-file", str(sec / "ca.pem"),
             "-keystore", str(ca), *store)  # fmt: skip
    _keytool(java, "-genkeypair", "-alias", "broker", "-keyalg", "RSA", "-keysize", "2048",
             "-dname", "CN=localhost", "-validity", "365",
             "-keystore", str(broker), *store)  # fmt: skip
    _keytool(java, "-certreq", "-alias", "broker", "-file", str(sec / "broker.csr"),
             "-keystore", str(broker), *store)  # fmt: skip
    _keytool(java, "-gencert", "-alias", "ca", "-infile", str(sec / "broker.csr"),
             "-outfile", str(sec / "broker.crt"), "-rfc", "-validity", "365",
             "-ext", "SAN=ip:127.0.0.1,dns:localhost", "-ext", "EKU=serverAuth,clientAuth",
             "-keystore", str(ca), *store)  # fmt: skip
    _keytool(java, "-importcert", "-noprompt", "-alias", "ca", "-file", str(sec / "ca.pem"),
             "-keystore", str(broker), *store)  # fmt: skip
    _keytool(java, "-importcert", "-noprompt", "-alias", "broker",
             "-file", str(sec / "broker.crt"), "-keystore", str(broker), *store)  # fmt: skip
    _keytool(java, "-importcert", "-noprompt", "-alias", "ca", "-file", str(sec / "ca.pem"),
             "-keystore", str(trust), *store)  # fmt: skip
    for path in (ca, broker, trust):
        os.chmod(path, 0o600)


def _jaas(user: str, password: str) -> str:
    return f'{_SCRAM_MODULE} required username="{user}" password="{password}";'


def broker_properties(folder: Path, mode: str, found: Secrets) -> dict[str, str]:
    """The broker's settings of ``mode`` for its ``SECURED`` listener (not the listener
    itself, which :class:`streaming.kafka_local.BrokerConfig` declares)."""
    sec, listener = _dir(folder), LISTENER.lower()
    props: dict[str, str] = {}
    if uses_scram(mode):
        props.update(
            {
                "sasl.enabled.mechanisms": MECHANISM,
                "sasl.mechanism.inter.broker.protocol": MECHANISM,
                f"listener.name.{listener}.{MECHANISM.lower()}.sasl.jaas.config": _jaas(
                    ADMIN_USER, found.admin
                ),
            }
        )
    if uses_tls(mode):
        props.update(
            {
                "ssl.keystore.location": str(sec / "broker.p12"),
                "ssl.keystore.password": found.store,
                "ssl.keystore.type": "PKCS12",
                "ssl.truststore.location": str(sec / "truststore.p12"),
                "ssl.truststore.password": found.store,
                "ssl.truststore.type": "PKCS12",
                "ssl.client.auth": "none",
            }
        )
    return props


def scram_format_args(mode: str, found: Secrets) -> list[str]:
    """``StorageTool format`` arguments that create the SCRAM users."""
    if not uses_scram(mode):
        return []
    out: list[str] = []
    for user, password in ((ADMIN_USER, found.admin), (CLIENT_USER, found.client)):
        out += ["--add-scram", f"{MECHANISM}=[name={user},password={password}]"]
    return out


def client_options(
    folder: Path, mode: str, found: Secrets, *, user: str = CLIENT_USER
) -> dict[str, str]:
    """The Java client settings for ``user`` (``monitor`` or ``admin``) on this broker."""
    if mode == "plaintext":
        return {}
    opts = {"security.protocol": PROTOCOLS[mode]}
    if uses_scram(mode):
        password = found.admin if user == ADMIN_USER else found.client
        opts["sasl.mechanism"] = MECHANISM
        opts["sasl.jaas.config"] = _jaas(user, password)
    if uses_tls(mode):
        opts["ssl.truststore.type"] = "PEM"
        opts["ssl.truststore.location"] = str(_dir(folder) / "ca.pem")
    return opts


def write_client_properties(folder: Path, options: dict[str, str]) -> Path:
    """``security/client.properties`` (0600) for other Java tools."""
    from streaming.kafka_connection import write_properties

    return write_properties(_dir(folder) / "client.properties", options)
