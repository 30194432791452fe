"""The checked-in records serialized by Kafka 4.4.0 decode to exactly what Kafka reads.

The same comparison as the oracle tier (``tests/codec_oracle``), on a fixed corpus and
without a JVM: every type and value version, every field, unknown tagged fields included.
"""

from __future__ import annotations

from typing import Any

import pytest

from streaming.codec import RECORD_TYPES, decode_record
from tests.codec_oracle.compare import compare_record
from tests.unit.streaming.codec.corpus import kafka_records

pytestmark = pytest.mark.unit


def test_corpus_covers_every_type_and_value_version() -> None:
    seen = {(r["t"], r["v"]) for r in kafka_records()}
    expected = {(t, v) for t, spec in RECORD_TYPES.items() for v in range(len(spec.values))}
    expected |= {(t, None) for t in RECORD_TYPES}
    assert seen == expected


@pytest.mark.parametrize(
    "record", kafka_records(), ids=lambda r: f"type{r['t']}-v{r['v']}-{r['k'][:12]}"
)
def test_decodes_as_kafka_reads_it(record: dict[str, Any]) -> None:
    key = bytes.fromhex(record["k"])
    value = None if record["val"] is None else bytes.fromhex(record["val"])
    diffs = compare_record(decode_record(key, value), record["t"], record["java"])
    assert not diffs, f"key {record['k']}\nvalue {record['val']}\n" + "\n".join(diffs)
