"""Runs Kafka's own Java assignors (the oracle) on scenarios, through ``AssignorOracle.java``.

The harness is compiled on first use with ``javac`` against the jars that ``make setup``
resolved into ``.cache/jars/oracle`` (kafka-clients and kafka-group-coordinator, newest 4.x),
and kept as one long-running JVM that answers one JSON line per request.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Literal

MemberOrder = Literal["join", "timeline"]

REPO = Path(__file__).resolve().parents[2]
SOURCE = Path(__file__).with_name("java") / "AssignorOracle.java"
JARS = REPO / ".cache" / "jars" / "oracle"
CLASSES = REPO / ".cache" / "oracle-classes"


class OracleUnavailable(RuntimeError):
    """javac/java or the oracle jars are missing (run ``make setup``)."""


def _classpath() -> str:
    if not (JARS / ".resolved").exists():
        raise OracleUnavailable(f"oracle jars missing in {JARS}: run `make setup`")
    return f"{CLASSES / _source_digest()}:{JARS}/*"


def _source_digest() -> str:
    return hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:16]


def compile_oracle() -> Path:
    """Compile the harness once per source version; returns the classes folder."""
    out = CLASSES / _source_digest()
    if (out / "AssignorOracle.class").exists():
        return out
    if shutil.which("javac") is None:
        raise OracleUnavailable("javac not found (Java 17 JDK required)")
    if not (JARS / ".resolved").exists():
        raise OracleUnavailable(f"oracle jars missing in {JARS}: run `make setup`")
    tmp = out.with_suffix(".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    subprocess.run(
        ["javac", "-nowarn", "-d", str(tmp), "-cp", f"{JARS}/*", str(SOURCE)],
        check=True,
        capture_output=True,
    )
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return out


class JavaOracle:
    """A long-running JVM answering assignment requests; use as a context manager."""

    def __init__(self, *, heap: str = "2g") -> None:
        compile_oracle()
        self._proc = subprocess.Popen(
            ["java", f"-Xmx{heap}", "-XX:+UseParallelGC", "-cp", _classpath(), "AssignorOracle"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            encoding="utf-8",
            bufsize=1,
        )
        self._next_id = 0

    def __enter__(self) -> JavaOracle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._proc.poll() is None:
            assert self._proc.stdin is not None
            self._proc.stdin.close()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()

    def request(
        self,
        strategy: str,
        scenario: dict[str, Any],
        repeat: int = 1,
        *,
        member_order: MemberOrder = "join",
    ) -> dict[str, Any]:
        """One assignment: ``{"assignment": {...}, "elapsed_ns": T}`` or ``{"error": "..."}``."""
        return next(self.stream(strategy, [scenario], repeat=repeat, member_order=member_order))

    def stream(
        self,
        strategy: str,
        scenarios: Iterable[dict[str, Any]],
        repeat: int = 1,
        *,
        member_order: MemberOrder = "join",
    ) -> Iterator[dict[str, Any]]:
        """Answers in request order; a writer thread pipelines the requests.

        ``member_order`` (server side): the coordinator's member map receives the scenario's
        members in their order (``"join"``), or in the iteration order of the group's
        ``TimelineHashMap`` that received them in that order (``"timeline"``).
        """
        assert self._proc.stdin is not None
        stdin = self._proc.stdin
        lines = []
        for scenario in scenarios:
            self._next_id += 1
            line: dict[str, Any] = {"id": self._next_id, "strategy": strategy, "scenario": scenario}
            if repeat > 1:
                line["repeat"] = repeat
            if member_order != "join":
                line["member_order"] = member_order
            lines.append(json.dumps(line) + "\n")

        def write() -> None:
            for text in lines:
                stdin.write(text)
            stdin.flush()

        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        for _ in lines:
            yield self._read()
        writer.join()

    def _read(self) -> dict[str, Any]:
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline()
        if not line:
            raise OracleUnavailable(f"the oracle JVM exited (code {self._proc.poll()})")
        answer: dict[str, Any] = json.loads(line)
        return answer
