"""Regenerate the codec's checked-in corpus from Kafka's own serializers.

    .venv/bin/python -m tests.codec_oracle.make_corpus

Writes ``tests/unit/streaming/codec/data/kafka_records.jsonl``: for every record type and
value version Kafka 4.4.0 defines, up to three seeded records (key hex, value hex and Kafka's
reading of them) plus a tombstone per type. The unit tier checks the decoder against it and
fuzzes mutations of it without a JVM.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from tests.codec_oracle.recordoracle import generate

SEED = 20261121
PER_VERSION = 3
MAX_LINE = 6000
OUT = Path(__file__).resolve().parents[1] / "unit" / "streaming" / "codec" / "data"


def main() -> None:
    records = generate(SEED, 8, 1)
    candidates: dict[tuple[int, int | None], list[str]] = defaultdict(list)
    for record in records:
        line = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
        candidates[(record["t"], record["v"])].append(line)
    picked: dict[tuple[int, int | None], list[str]] = {}
    for slot, lines in candidates.items():
        small = [line for line in lines if len(line) <= MAX_LINE][:PER_VERSION]
        picked[slot] = small or [min(lines, key=len)]
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / "kafka_records.jsonl"
    path.write_text("".join(line + "\n" for lines in picked.values() for line in lines))
    print(f"wrote {sum(map(len, picked.values()))} records to {path}")


if __name__ == "__main__":
    main()
