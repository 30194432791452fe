"""Fuzz: mutated and truncated real records plus random bytes never raise anything but
``DecodeError``, and every error names a field of the key or value and an offset inside it.

Seeded (``CODEC_FUZZ_SEED``); the input count defaults to 150,000 (``CODEC_FUZZ_INPUTS``). A
failure prints the failing input as hex, ready for ``rebalance-monitor decode``. The
offset-commit fast path is checked against the per-version decoders on every input it accepts.
"""

from __future__ import annotations

import json
import os
import random
import traceback
from collections.abc import Iterator

import pytest

from streaming.codec import (
    RECORD_TYPES,
    DecodeError,
    decode_assignment,
    decode_cooperative_sticky_user_data,
    decode_record,
    decode_sticky_user_data,
    decode_subscription,
    to_json,
)
from streaming.codec.decode import decode_record_general
from streaming.codec.model import GroupMetadata
from streaming.codec.offsets import decode_offset_commit_fast
from tests.unit.streaming.codec import wire as w
from tests.unit.streaming.codec.corpus import pairs
from tests.unit.streaming.codec.mutations import Pair, mutate, mutations

pytestmark = [pytest.mark.unit, pytest.mark.slow]

SEED = int(os.environ.get("CODEC_FUZZ_SEED", "20261121"))
INPUTS = int(os.environ.get("CODEC_FUZZ_INPUTS", "150000"))


def corpus() -> list[Pair]:
    extra = [
        (w.offset_key("g", "t", 1), w.offset_value_v3(5, 1, "meta", 7)),
        (w.offset_key("g", "t", 1, 0), w.i16(1) + w.i64(1) + w.string("") + w.i64(2) + w.i64(3)),
        (w.group_key("g"), None),
    ]
    return pairs() + extra


def random_inputs(rnd: random.Random, count: int) -> Iterator[Pair]:
    """Random bytes, half of them behind a known record type and value version."""
    types = sorted(RECORD_TYPES)
    for i in range(count):
        key = rnd.randbytes(rnd.randint(0, 24))
        value = None if rnd.random() < 0.1 else rnd.randbytes(rnd.randint(0, 80))
        if i % 2:
            record_type = rnd.choice(types)
            key = w.i16(record_type) + key
            if value is not None:
                version = rnd.randrange(len(RECORD_TYPES[record_type].values))
                value = w.i16(version) + value
        yield key, value


def describe(key: bytes, value: bytes | None) -> str:
    return f"--key-hex {key.hex()} " + ("" if value is None else f"--value-hex {value.hex()}")


def check(key: bytes, value: bytes | None, failures: list[str]) -> object:
    try:
        record = decode_record(key, value)
    except DecodeError as e:
        buffer = key if e.field.startswith("key") else value
        if not (e.field.startswith(("key", "value")) and buffer is not None):
            failures.append(f"error names no key/value field: {e!r}\n{describe(key, value)}")
        elif not 0 <= e.offset <= len(buffer):
            failures.append(f"offset outside the buffer: {e}\n{describe(key, value)}")
        return None
    except Exception:
        failures.append(f"{traceback.format_exc()}\n{describe(key, value)}")
        return None
    fast = decode_offset_commit_fast(key, value) if key[:1] == b"\x00" else None
    if fast is not None and fast != decode_record_general(key, value):
        failures.append(f"fast path differs from the per-version decoders\n{describe(key, value)}")
    return record


def test_fuzz_records_only_raise_decode_error() -> None:
    rnd = random.Random(SEED)
    seeds = corpus()
    failures: list[str] = []
    count = decoded = 0
    n_random = INPUTS // 5
    inputs = [*mutations(SEED, seeds, INPUTS - n_random), *random_inputs(rnd, n_random)]
    for key, value in inputs:
        count += 1
        record = check(key, value, failures)
        if record is not None:
            decoded += 1
            if count % 16 == 0:
                json.dumps(to_json(record))
        if len(failures) >= 5:
            break
    print(f"fuzz: {count} inputs, {decoded} decoded, {count - decoded} DecodeError")
    assert not failures, "\n\n".join(failures)
    assert count >= min(INPUTS, 100_000)


def test_fuzz_consumer_protocol_payloads() -> None:
    """The embedded payloads on their own; the sticky user-data readers never raise."""
    rnd = random.Random(SEED + 1)
    payloads: list[bytes] = []
    for key, value in pairs():
        record = decode_record(key, value)
        if isinstance(record, GroupMetadata):
            for m in record.members:
                payloads += [b for b in (m.subscription_bytes, m.assignment_bytes) if b]
    payloads += [
        w.subscription(3, ["t"], w.sticky_user_data([("t", [0])], 1), [("t", [0])], 1, "r"),
        w.assignment(1, [("t", [0, 1])], b"x"),
        w.sticky_user_data([("a", [1]), ("b", [])], 3),
    ]
    failures: list[str] = []
    for i in range(20_000):
        base = rnd.choice(payloads)
        data = mutate(rnd, (b"\x00\x02", base), [(b"", p) for p in payloads])[1] or b""
        if i % 4 == 0:
            data = rnd.randbytes(rnd.randint(0, 30))
        for fn in (decode_subscription, decode_assignment):
            try:
                fn(data)
            except DecodeError:
                pass
            except Exception:
                failures.append(f"{fn.__name__}({data.hex()}):\n{traceback.format_exc()}")
        try:
            decode_sticky_user_data(data)
            decode_cooperative_sticky_user_data(data)
            decode_subscription(data, "sticky")
        except DecodeError:
            pass
        except Exception:
            failures.append(f"user data {data.hex()}:\n{traceback.format_exc()}")
        if len(failures) >= 5:
            break
    assert not failures, "\n\n".join(failures)
