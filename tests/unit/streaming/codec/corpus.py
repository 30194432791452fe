"""The checked-in corpus: records serialized by Kafka 4.4.0 itself, with Kafka's reading.

Regenerate with ``python -m tests.codec_oracle.make_corpus`` (needs a JDK and ``make setup``).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

CORPUS = Path(__file__).with_name("data") / "kafka_records.jsonl"


@cache
def kafka_records() -> tuple[dict[str, Any], ...]:
    """``{"t": type, "v": version|None, "k": hex, "val": hex|None, "java": view}`` each."""
    with CORPUS.open(encoding="utf-8") as f:
        return tuple(json.loads(line) for line in f if line.strip())


def pairs() -> list[tuple[bytes, bytes | None]]:
    return [
        (bytes.fromhex(r["k"]), None if r["val"] is None else bytes.fromhex(r["val"]))
        for r in kafka_records()
    ]
