"""Rows: JSON-ready dicts and back, stable unique ids."""

from __future__ import annotations

import json
import random
from urllib.parse import quote

import pytest

from streaming.tracking import GroupState, apply
from streaming.tracking.events import EVENT_TYPES, event_id, from_row, to_row
from tests.unit.streaming.tracking.test_reducer import scenario

pytestmark = pytest.mark.unit


def test_every_row_round_trips_through_json() -> None:
    _state, events = apply(GroupState.new("local", "orders-app"), scenario(), 10**6)
    assert {type(e).kind for e in events} >= {
        "rebalance", "member_assignment", "group_metrics", "partition_lag", "group_status",
    }  # fmt: skip
    for e in events:
        row = json.loads(json.dumps(to_row(e)))
        assert row["kind"] == type(e).kind
        cls = EVENT_TYPES[row.pop("kind")]
        assert from_row(cls, row) == e


def test_ids_are_stable_and_unique() -> None:
    a = apply(GroupState.new("local", "orders-app"), scenario(), 10**6)[1]
    b = apply(GroupState.new("local", "orders-app"), scenario(), 2 * 10**6)[1]
    ids_a = [e.event_id for e in a]
    assert ids_a == [e.event_id for e in b]
    assert len(ids_a) == len(set(ids_a))


def test_event_id_encodes_separators() -> None:
    assert event_id("rebalance", "c/1", "my group/x", 3, "7:12") == (
        "rebalance/c%2F1/my%20group%2Fx/3/7%3A12"
    )
    assert event_id("status", "c", "g") == "status/c/g"


def test_every_string_part_is_percent_encoded_as_quote_does() -> None:
    """Parts that need no encoding are taken as they are, the others encoded: either way the
    part is ``quote(part, safe="")``, for names made of safe, reserved, space, non-ASCII and
    control characters."""
    rng = random.Random(20261130)
    alphabet = "aZ09_.-~/%:+ @?#&=éü中\x00\n\t"
    for _ in range(5_000):
        part = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 10)))
        assert event_id("k", "c", "g", part, 7) == f"k/c/g/{quote(part, safe='')}/7", part
