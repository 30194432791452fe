"""``record_route`` reads from a record's key and value version what ``decode_record`` reads
from the whole record: the same group and type, the same key errors, and for a value that
does not parse the group its key names (the value is decoded where the record is applied)."""

from __future__ import annotations

import pytest

from streaming.codec import RECORD_TYPES, DecodeError, decode_record, record_route
from streaming.codec.model import Unknown
from streaming.tracking.model import group_id_of
from tests.unit.streaming.codec.corpus import pairs
from tests.unit.streaming.codec.mutations import Pair, mutations

pytestmark = pytest.mark.unit


def _inputs() -> list[Pair]:
    corpus = pairs()
    return corpus + list(mutations(20261130, corpus, 20_000))


def _expected(key: bytes, value: bytes | None) -> tuple[str, str | None] | DecodeError:
    """What routing must give, from what ``decode_record`` gives."""
    try:
        record = decode_record(key, value)
    except DecodeError as e:
        if e.field.startswith("key") or e.field == "value.version":
            return e
        return _name(key), group_id_of(decode_record(key, None))  # the key parsed: its group
    if isinstance(record, Unknown):
        return "Unknown", None
    return _name(key) + ("Tombstone" if value is None else ""), group_id_of(record)


def _name(key: bytes) -> str:
    return RECORD_TYPES[int.from_bytes(key[:2], "big", signed=True)].name


def test_the_route_is_what_the_whole_record_names() -> None:
    inputs = _inputs()
    value_errors = tombstones = unknown = 0
    for key, value in inputs:
        expected = _expected(key, value)
        if isinstance(expected, DecodeError):
            with pytest.raises(DecodeError) as raised:
                record_route(key, value)
            assert (raised.value.field, raised.value.offset) == (expected.field, expected.offset)
            continue
        assert record_route(key, value) == expected, key.hex()
        unknown += expected[1] is None
        tombstones += value is None
        try:
            decode_record(key, value)
        except DecodeError:
            value_errors += 1
    # every branch is taken: records of every kind, values the step will quarantine
    assert min(value_errors, tombstones, unknown) > 0, (value_errors, tombstones, unknown)


def test_a_key_of_every_type_routes_to_its_group() -> None:
    """The corpus has a key of every type (0: legacy commits aside), and each routes to the
    group its tombstone names."""
    keys = {int.from_bytes(k[:2], "big"): k for k, _v in pairs() if len(k) >= 2}
    assert set(keys) >= set(RECORD_TYPES) - {0}
    for key in keys.values():
        name, group = record_route(key, None)
        assert name.endswith("Tombstone")
        assert group == group_id_of(decode_record(key, None)) is not None
