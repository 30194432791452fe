"""Differential conformance: the Python codec reads every record as Kafka 4.4.0 does.

1. Kafka's own serializers build seeded random records of every type and value version
   (``RecordOracle.java``: generated message classes, ``ConsumerProtocol``, the sticky
   assignors' user-data schemas, unknown tagged fields); each must decode to exactly the
   fields Kafka reads back (``CODEC_ORACLE_RECORDS`` per type and version, default 300).
2. Mutations of those records are read by both: when Python decodes, Kafka must decode the
   same fields; when Kafka decodes and Python refuses, it must be for one of the documented
   strictness rules (``CODEC_ORACLE_MUTATIONS``, default 20,000).

A mismatch prints the key/value hex, ready for ``rebalance-monitor decode``.
"""

from __future__ import annotations

import collections
import os
import re
from typing import Any

import pytest

from streaming.codec import RECORD_TYPES, DecodeError, decode_record
from streaming.codec.model import Unknown
from tests.codec_oracle.compare import compare_record
from tests.codec_oracle.recordoracle import RecordDecoder, generate
from tests.unit.streaming.codec.mutations import Pair, mutations

pytestmark = [pytest.mark.oracle, pytest.mark.slow]

SEED = int(os.environ.get("CODEC_ORACLE_SEED", "20261121"))
RECORDS = int(os.environ.get("CODEC_ORACLE_RECORDS", "300"))
MUTATIONS = int(os.environ.get("CODEC_ORACLE_MUTATIONS", "20000"))
TOMBSTONES = 20

# Python refuses some bytes Kafka reads (the codec is stricter on malformed input):
STRICTER = (
    # invalid UTF-8: Java substitutes U+FFFD
    re.compile(r"invalid UTF-8"),
    # unsigned varints beyond the int32 range or longer than 5 bytes: Java wraps them
    re.compile(r"varint"),
    # a known tagged field must fill its declared size: Java reads it ignoring the size
    re.compile(r"unread byte\(s\) in a tagged field"),
)
# ... or fails in a tagged-field section / known tag after Java misread a known tag's size
KNOWN_TAGS = re.compile(
    r"(_tagged_fields|topic_id|metadata_hash|classic_member_metadata|assignment_ts_ms|"
    r"assignment_epochs|validated_topology_epoch|last_assignment_configs|"
    r"stored_description_topology_epoch|failed_description_topology_epoch)"
)


@pytest.fixture(scope="module")
def kafka_records() -> list[dict[str, Any]]:
    return generate(SEED, RECORDS, TOMBSTONES)


def _pair(record: dict[str, Any]) -> Pair:
    value = record["val"]
    return bytes.fromhex(record["k"]), None if value is None else bytes.fromhex(value)


def test_oracle_covers_every_record_type_and_version(kafka_records: list[dict[str, Any]]) -> None:
    seen = {(r["t"], r["v"]) for r in kafka_records}
    expected = {(t, v) for t, spec in RECORD_TYPES.items() for v in range(len(spec.values))}
    assert seen == expected | {(t, None) for t in RECORD_TYPES}


@pytest.mark.parametrize("record_type", sorted(RECORD_TYPES))
def test_python_reads_kafka_records_as_kafka_does(
    record_type: int, kafka_records: list[dict[str, Any]]
) -> None:
    checked = 0
    for record in kafka_records:
        if record["t"] != record_type:
            continue
        checked += 1
        key, value = _pair(record)
        try:
            diffs = compare_record(decode_record(key, value), record_type, record["java"])
        except DecodeError as e:
            diffs = [f"DecodeError: {e}"]
        if diffs:
            pytest.fail(
                f"type {record_type} v{record['v']} differs from Kafka:\n"
                f"--key-hex {record['k']} --value-hex {record['val']}\n" + "\n".join(diffs[:10])
            )
    versions = len(RECORD_TYPES[record_type].values)
    assert checked == RECORDS * versions + TOMBSTONES


def _allowed_refusal(error: DecodeError) -> bool:
    return any(p.search(error.reason) for p in STRICTER) or bool(KNOWN_TAGS.search(error.field))


def test_mutated_records_read_as_kafka_does(kafka_records: list[dict[str, Any]]) -> None:
    corpus = [_pair(r) for r in kafka_records[:: max(1, len(kafka_records) // 2000)]]
    inputs = list(mutations(SEED, corpus, MUTATIONS))
    outcomes: collections.Counter[str] = collections.Counter()
    failures: list[str] = []
    with RecordDecoder() as kafka:
        for (key, value), answer in zip(inputs, kafka.decode_all(inputs), strict=True):
            hexes = f"--key-hex {key.hex()}" + (
                "" if value is None else f" --value-hex {value.hex()}"
            )
            try:
                record = decode_record(key, value)
            except DecodeError as e:
                if "java" in answer or "unknown" in answer:
                    outcomes["kafka reads, python refuses (stricter)"] += 1
                    if not _allowed_refusal(e):
                        failures.append(f"python refuses what Kafka reads: {e}\n{hexes}")
                else:
                    outcomes["both refuse"] += 1
                continue
            if isinstance(record, Unknown):
                outcomes["both unknown"] += 1
                if "unknown" not in answer:
                    failures.append(f"python Unknown, Kafka {answer}\n{hexes}")
                continue
            if "java" not in answer:
                failures.append(f"python decodes what Kafka refuses ({answer})\n{hexes}")
                continue
            outcomes["both decode"] += 1
            record_type = int.from_bytes(key[:2], "big", signed=True)
            diffs = compare_record(record, record_type, answer["java"])
            if diffs:
                failures.append(f"fields differ from Kafka's:\n{hexes}\n" + "\n".join(diffs[:5]))
            if len(failures) >= 5:
                break
    print(f"mutations: {dict(outcomes)}")
    assert not failures, "\n\n".join(failures)
    assert outcomes["both decode"] > MUTATIONS // 20
