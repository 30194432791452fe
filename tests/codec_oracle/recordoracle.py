"""Runs Kafka's own record serializers and readers (the oracle) through ``RecordOracle.java``.

Compiled on first use with ``javac`` against the jars ``make setup`` resolved into
``.cache/jars/oracle`` (kafka-clients, kafka-group-coordinator 4.4.0, jackson), like
:mod:`tests.oracle.javaoracle`. Two modes:

* :func:`generate` — seeded random records of every type and value version, with Kafka's
  reading of each (one dict per record: ``t``, ``v``, ``k``, ``val``, ``java``);
* :class:`RecordDecoder` — a long-running JVM that reads arbitrary key/value bytes the way
  Kafka does (``{"java": view}``, ``{"unknown": ...}`` or ``{"error": ...}``).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
SOURCE = Path(__file__).with_name("java") / "RecordOracle.java"
JARS = REPO / ".cache" / "jars" / "oracle"
CLASSES = REPO / ".cache" / "codec-oracle-classes"


class OracleUnavailable(RuntimeError):
    """javac/java or the oracle jars are missing (run ``make setup``)."""


def _source_digest() -> str:
    return hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:16]


def compile_oracle() -> Path:
    """Compile the harness once per source version; returns the classes folder."""
    out = CLASSES / _source_digest()
    if (out / "RecordOracle.class").exists():
        return out
    if shutil.which("javac") is None:
        raise OracleUnavailable("javac not found (Java 17 JDK required)")
    if not (JARS / ".resolved").exists():
        raise OracleUnavailable(f"oracle jars missing in {JARS}: run `make setup`")
    tmp = out.with_suffix(".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    done = subprocess.run(
        ["javac", "-nowarn", "-d", str(tmp), "-cp", f"{JARS}/*", str(SOURCE)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise OracleUnavailable(f"javac failed:\n{done.stderr}")
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return out


def _java(*args: str) -> list[str]:
    classes = compile_oracle()
    return ["java", "-Xmx1g", "-cp", f"{classes}:{JARS}/*", "RecordOracle", *args]


def generate(seed: int, per_version: int, tombstones: int) -> list[dict[str, Any]]:
    """``per_version`` records for every (type, value version) and ``tombstones`` per type."""
    done = subprocess.run(
        _java("generate", str(seed), str(per_version), str(tombstones)),
        capture_output=True,
        text=True,
        encoding="utf-8",
    )
    if done.returncode != 0:
        raise OracleUnavailable(f"RecordOracle generate failed:\n{done.stderr[-4000:]}")
    return [json.loads(line) for line in done.stdout.splitlines() if line]


class RecordDecoder:
    """A JVM reading records as Kafka does; use as a context manager."""

    def __init__(self) -> None:
        self._proc = subprocess.Popen(
            _java("decode"),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            encoding="utf-8",
            bufsize=1 << 16,
        )

    def __enter__(self) -> RecordDecoder:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._proc.poll() is None:
            assert self._proc.stdin is not None
            self._proc.stdin.close()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()

    def decode_all(self, records: Iterable[tuple[bytes, bytes | None]]) -> Iterator[dict[str, Any]]:
        """Kafka's answers, in input order (a writer thread pipelines the requests)."""
        assert self._proc.stdin is not None and self._proc.stdout is not None
        stdin, stdout = self._proc.stdin, self._proc.stdout
        lines = [f"{k.hex()}|{'-' if v is None else v.hex()}\n" for k, v in records]

        def write() -> None:
            for text in lines:
                stdin.write(text)
            stdin.flush()

        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        for _ in lines:
            line = stdout.readline()
            if not line:
                raise OracleUnavailable(f"the oracle JVM exited (code {self._proc.poll()})")
            yield json.loads(line)
        writer.join()
