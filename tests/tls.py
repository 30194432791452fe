"""Test certificates made with the ``openssl`` command: a CA, a server certificate for
127.0.0.1 and localhost, and a client certificate, all signed by that CA."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Certs", "make_certs"]


@dataclass(frozen=True)
class Certs:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    other_ca: Path  # a CA that signed none of these


def _openssl(*args: str | Path) -> None:
    subprocess.run(["openssl", *map(str, args)], check=True, capture_output=True, timeout=60)


def _ca(folder: Path, name: str) -> tuple[Path, Path]:
    key, cert = folder / f"{name}.key", folder / f"{name}.pem"
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
             f"/CN={name}", "-keyout", key, "-out", cert)  # fmt: skip
    return cert, key


def _signed(folder: Path, name: str, ca: tuple[Path, Path], ext: str) -> tuple[Path, Path]:
    key, csr, cert = folder / f"{name}.key", folder / f"{name}.csr", folder / f"{name}.pem"
    extfile = folder / f"{name}.ext"
    extfile.write_text(ext + "\n")
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={name}",
             "-keyout", key, "-out", csr)  # fmt: skip
    _openssl("x509", "-req", "-in", csr, "-CA", ca[0], "-CAkey", ca[1], "-CAcreateserial",
             "-days", "2", "-extfile", extfile, "-out", cert)  # fmt: skip
    return cert, key


def make_certs(folder: Path) -> Certs:
    folder.mkdir(parents=True, exist_ok=True)
    ca = _ca(folder, "test-ca")
    other, _ = _ca(folder, "other-ca")
    server = _signed(
        folder,
        "server",
        ca,
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth",
    )
    client = _signed(folder, "client", ca, "extendedKeyUsage=clientAuth")
    return Certs(ca[0], server[0], server[1], client[0], client[1], other)
