"""A bucket's group states as the stateful step keeps them (:mod:`streaming.spark.stateful`):
one value per bucket, a group's state parsed only when the group has rows, a checkpoint of the
layout with a MapState entry per group read and moved. The fakes below hold what Spark's
ValueState and MapState hold; the real state store is :mod:`tests.spark.test_bucket_state`'s."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from streaming.spark.buckets import BucketStates, load_bucket, logical_now_ms, store_bucket
from streaming.spark.stateful import load_reducer
from streaming.tracking import GroupState, apply
from streaming.tracking.errors import StateFormatError
from tests.unit.streaming.tracking.factories import (
    CLUSTER,
    Log,
    group_tombstone,
    member,
    tps,
)

pytestmark = pytest.mark.unit

REDUCER = load_reducer()


class Value:
    """Spark's ValueState: a tuple or nothing; counts its calls."""

    def __init__(self, value: tuple[Any, ...] | None = None) -> None:
        self.value, self.updates, self.clears = value, 0, 0

    def get(self) -> tuple[Any, ...] | None:
        return self.value

    def update(self, value: tuple[Any, ...]) -> None:
        self.value, self.updates = value, self.updates + 1

    def clear(self) -> None:
        self.value, self.clears = None, self.clears + 1


class Map:
    """Spark's MapState: key tuple -> value tuple."""

    def __init__(self, entries: dict[tuple[str], tuple[str]] | None = None) -> None:
        self.entries = dict(entries or {})

    def exists(self) -> bool:
        return bool(self.entries)

    def iterator(self) -> Iterator[tuple[tuple[str], tuple[str]]]:
        return iter(list(self.entries.items()))

    def clear(self) -> None:
        self.entries.clear()


def _rebalance(group: str, generation: int, ts: int) -> list[Any]:
    log = Log()
    members = [member("m-1", ["t"], tps("t", 0, 1)), member("m-2", ["t"], tps("t", 2, 3))]
    log.gm(generation, members, ts=ts, group=group)
    log.commits(tps("t", 0, 1, 2, 3), ts=ts + 1_000)
    return [o for o in log.take() if getattr(o.payload, "group_id", group) == group]


def _alone(group: str, observations: list[Any], state: GroupState | None = None) -> Any:
    """What the pure reducer gives for one group, with no state store in between."""
    state = state or GroupState.new(CLUSTER, group)
    return apply(state, observations, logical_now_ms(state, observations))


def test_a_bucket_keeps_each_groups_state_as_the_reducer_leaves_it() -> None:
    first = {g: _rebalance(g, 1, 1_000_000) for g in ("g-a", "g-b")}
    value = Value()
    bucket = load_bucket(value, Map())
    events = {g: bucket.step(g, obs, CLUSTER, REDUCER) for g, obs in first.items()}
    store_bucket(value, bucket)
    assert value.updates == 1 and value.value is not None

    again = load_bucket(value, Map())
    assert set(again.states) == {"g-a", "g-b"}
    for group, observations in first.items():
        state, expected = _alone(group, observations)
        assert list(events[group]) == list(expected)
        assert GroupState.decode(again.states[group]).to_json() == state.to_json()

    # the next batch starts from the stored state: a new generation is a rebalance from 1
    later = _rebalance("g-a", 2, 2_000_000)
    state_a, _ = _alone("g-a", first["g-a"])
    _, expected = _alone("g-a", later, state_a)
    assert list(again.step("g-a", later, CLUSTER, REDUCER)) == list(expected)
    assert again.changed


def test_an_unchanged_bucket_is_not_written_and_an_emptied_one_is_cleared() -> None:
    value = Value()
    bucket = load_bucket(value, Map())
    observations = _rebalance("g-a", 1, 1_000_000)
    bucket.step("g-a", observations, CLUSTER, REDUCER)
    store_bucket(value, bucket)
    # nothing new for the group (the reducer's deadline check): the state stays byte for byte
    same = load_bucket(value, Map())
    assert same.step("g-a", [], CLUSTER, REDUCER) == []
    assert not same.changed
    store_bucket(value, same)
    assert value.updates == 1
    # the group's tombstone empties its state: the group leaves the bucket, the bucket goes
    log = Log(next_offset=10_000)
    log.rec(group_tombstone("g-a"), 3_000_000)
    gone = load_bucket(value, Map())
    gone.step("g-a", log.take(), CLUSTER, REDUCER)
    assert gone.states == {} and gone.changed
    store_bucket(value, gone)
    assert value.value is None and value.clears == 1


def test_a_checkpoint_with_an_entry_per_group_is_moved_into_the_bucket() -> None:
    state, _ = _alone("g-old", _rebalance("g-old", 1, 1_000_000))
    legacy = Map({("g-old",): (state.to_json(),)})
    value = Value()
    bucket = load_bucket(value, legacy)
    assert legacy.entries == {} and bucket.changed
    assert GroupState.decode(bucket.states["g-old"]).to_json() == state.to_json()
    # read once: with the bucket written, the old map is not looked at again
    store_bucket(value, bucket)
    legacy.entries[("g-stale",)] = ("{}",)
    assert set(load_bucket(value, legacy).states) == {"g-old"}


def test_an_unreadable_bucket_names_what_it_is() -> None:
    with pytest.raises(StateFormatError, match=r"\$bucket.*not a bucket of group states"):
        BucketStates.decode(b"\xc1 not msgpack")


def test_a_bucket_is_stored_compressed_and_one_written_before_is_read() -> None:
    """The bucket's value is zstd-compressed msgpack, its groups' states msgpack; a bucket
    written before (plain msgpack of each group's JSON, or zlib-compressed msgpack) reads the
    same and is stepped on."""
    import zlib

    import msgspec

    state, _ = _alone("g-1", _rebalance("g-1", 1, 1_000_000))
    before = msgspec.msgpack.encode({"g-1": state.to_json().encode()})
    bucket = BucketStates.decode(before)
    assert GroupState.decode(bucket.states["g-1"]) == state
    zlib_before = zlib.compress(msgspec.msgpack.encode({"g-1": state.encode()}), 1)
    assert BucketStates.decode(zlib_before).states == {"g-1": state.encode()}
    now = BucketStates({"g-1": state.encode()}).encode()
    assert now[:4] == b"zstd" and len(now) < len(before)
    assert GroupState.decode(BucketStates.decode(now).states["g-1"]) == state
    with pytest.raises(StateFormatError, match=r"\$bucket"):
        BucketStates.decode(now[:-4] + b"oops")
