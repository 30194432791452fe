"""GroupState: serialization round trip (property test), version and field errors, bounds."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assign_core.model import TopicPartition
from streaming.codec.model import GroupKey, MemberKey, Tombstone
from streaming.tracking import GroupState, StateFormatError, apply
from streaming.tracking.config import TrackerConfig
from streaming.tracking.model import Observation, Payload
from tests.unit.streaming.tracking.factories import (
    CLUSTER,
    GROUP,
    cg_current,
    cg_epoch,
    cg_member,
    cg_partitions,
    cg_target,
    cg_target_epoch,
    commit,
    group_metadata,
    group_snapshot,
    group_tombstone,
    member,
    offset_tombstone,
    topics_snapshot,
)

pytestmark = pytest.mark.unit

TOPICS = ("Order", "Stock")
MEMBERS = ("m1", "m2", "m3")


def _partitions(draw: st.DrawFn) -> tuple[TopicPartition, ...]:
    return tuple(
        draw(
            st.lists(
                st.builds(TopicPartition, st.sampled_from(TOPICS), st.integers(0, 5)),
                max_size=4,
                unique=True,
            )
        )
    )


@st.composite
def payloads(draw: st.DrawFn) -> tuple[str, Payload]:
    kind = draw(st.integers(0, 12))
    ts = draw(st.integers(0, 10**6))
    if kind == 0:
        ids = draw(st.lists(st.sampled_from(MEMBERS), unique=True, max_size=3))
        members = [
            member(
                m,
                draw(st.lists(st.sampled_from(TOPICS), unique=True, min_size=1)),
                _partitions(draw),
                instance=draw(st.sampled_from([None, f"i-{m}"])),
                owned=_partitions(draw),
                generation=draw(st.integers(-1, 5)),
            )
            for m in ids
        ]
        gm = group_metadata(
            draw(st.integers(0, 6)),
            members,
            protocol=draw(st.sampled_from(["range", "cooperative-sticky", "roundrobin"])),
            current_state_ts_ms=ts - 10,
        )
        return "offsets", gm
    if kind == 1:
        return "offsets", commit(
            draw(st.sampled_from(TOPICS)), draw(st.integers(0, 5)), draw(st.integers(0, 999)), ts=ts
        )
    if kind == 2:
        return "offsets", offset_tombstone(draw(st.sampled_from(TOPICS)), draw(st.integers(0, 5)))
    if kind == 3:
        return "membership", group_snapshot(
            ts,
            draw(st.sampled_from(["Stable", "PreparingRebalance", "Empty"])),
            draw(st.lists(st.sampled_from(MEMBERS), unique=True)),
            topics=TOPICS,
        )
    if kind == 4:
        return "membership", topics_snapshot(
            ts,
            {
                t: draw(st.lists(st.integers(0, 10**4), min_size=1, max_size=6))
                for t in draw(st.lists(st.sampled_from(TOPICS), unique=True))
            },
            racks=None,
        )
    if kind == 5:
        return "offsets", group_tombstone()
    if kind == 6:
        return "offsets", cg_member(
            draw(st.sampled_from(MEMBERS)),
            draw(st.lists(st.sampled_from(TOPICS), unique=True, min_size=1)),
            instance=draw(st.sampled_from([None, "s"])),
        )
    if kind == 7:
        return "offsets", cg_epoch(draw(st.integers(0, 6)))
    if kind == 8:
        return "offsets", cg_target(draw(st.sampled_from(MEMBERS)), _partitions(draw))
    if kind == 9:
        return "offsets", cg_target_epoch(draw(st.integers(0, 6)))
    if kind == 10:
        return "offsets", cg_current(
            draw(st.sampled_from(MEMBERS)),
            draw(st.integers(-2, 6)),
            _partitions(draw),
            state=draw(st.sampled_from([0, 1, 2])),
        )
    if kind == 11:
        return "offsets", cg_partitions({t: draw(st.integers(1, 6)) for t in TOPICS})
    rtype = draw(st.sampled_from([3, 4, 5, 6, 7, 8]))
    key = (
        GroupKey(GROUP) if rtype in (3, 4, 6) else MemberKey(GROUP, draw(st.sampled_from(MEMBERS)))
    )
    return "offsets", Tombstone(rtype, key)


@st.composite
def batches(draw: st.DrawFn) -> list[list[Observation]]:
    out: list[list[Observation]] = []
    offset = {"offsets": 0, "membership": 0}
    for _ in range(draw(st.integers(1, 4))):
        batch = []
        for source, payload in draw(st.lists(payloads(), max_size=12)):
            ts = getattr(payload, "snapshot_ts_ms", None) or draw(st.integers(0, 10**6))
            batch.append(Observation(source, 0, offset[source], ts, payload))  # type: ignore[arg-type]
            offset[source] += 1
        out.append(batch)
    return out


def _without_counters(state: GroupState) -> dict[str, object]:
    return {k: v for k, v in state.to_dict().items() if k != "n"}


SMALL = TrackerConfig(classic_strategies=("range", "cooperative-sticky"))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches())
def test_state_round_trips_through_json(batches_: Sequence[Sequence[Observation]]) -> None:
    state = GroupState.new(CLUSTER, GROUP)
    for batch in batches_:
        state, _events = apply(state, batch, 10**7, config=SMALL)
        data = state.to_dict()
        text = json.dumps(data)
        back = GroupState.from_dict(json.loads(text))
        assert back == state
        assert GroupState.from_json(state.to_json()) == state
        assert back.to_dict() == data
        # the text is the compact JSON the json module wrote before msgspec: checkpoints of
        # either read back the same
        assert state.to_json() == json.dumps(data, separators=(",", ":"), ensure_ascii=False)
        assert GroupState.from_json(text.encode()) == state
        # the state store keeps msgpack, and still reads a checkpoint's JSON
        assert GroupState.decode(state.encode()) == state
        assert GroupState.decode(state.to_json().encode()) == state
        assert len(state.encode()) < len(state.to_json().encode())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches())
def test_apply_is_pure_and_replays_identically(batches_: Sequence[Sequence[Observation]]) -> None:
    """The input state is not modified; a state read back from JSON behaves the same; and
    re-applying a batch emits nothing new (idempotency)."""
    state = GroupState.new(CLUSTER, GROUP)
    for batch in batches_:
        before = state.to_dict()
        new, events = apply(state, batch, 10**7, config=SMALL)
        assert state.to_dict() == before
        again, events2 = apply(GroupState.from_dict(before), batch, 10**7, config=SMALL)
        assert events2 == events and again == new
        replay, events3 = apply(new, batch, 10**7, config=SMALL)
        assert [type(e).__name__ for e in events3 if type(e).__name__ != "GroupStatus"] == []
        assert _without_counters(replay) == _without_counters(new)
        state = new


def test_unknown_version_and_bad_fields_are_named() -> None:
    good = GroupState.new(CLUSTER, GROUP).to_dict()
    with pytest.raises(StateFormatError) as info:
        GroupState.from_dict({**good, "v": 99})
    assert info.value.field == "v"
    with pytest.raises(StateFormatError) as info:
        GroupState.from_dict({**good, "commits": {"t": [["x"]]}})
    assert info.value.field == "commits"
    with pytest.raises(StateFormatError) as info:
        GroupState.from_dict({**good, "classic": {"gen": 1}})
    assert info.value.field == "classic"
    with pytest.raises(StateFormatError):
        GroupState.from_json("[")
    with pytest.raises(StateFormatError):
        GroupState.decode(b"\xc1")  # never used in msgpack
    with pytest.raises(StateFormatError):
        GroupState.decode(b"\x93\x01\x02\x03")  # msgpack, but a list
    with pytest.raises(StateFormatError):
        GroupState.from_dict([])


def big_group_state(members: int, partitions_per_topic: int, snapshots: int) -> GroupState:
    """A classic group of ``members`` on two topics, committed every 5 s, a collector snapshot
    every 5 s for ``snapshots`` rounds."""
    from tests.unit.streaming.tracking.factories import Log, assign

    log = Log()
    ids = [f"consumer-{i}-0b6e3f2a-51c4-4bd3-9d52-1e0f5f3b{i:04d}" for i in range(members)]
    topics = {"Order": partitions_per_topic, "Stock": partitions_per_topic}
    actual = assign("range", [(m, list(topics)) for m in ids], topics)
    log.gm(5, [member(m, list(topics), actual[m]) for m in ids], ts=1000)
    state = GroupState.new(CLUSTER, GROUP)
    state, _ = apply(state, log.take(), 1000, config=SMALL)
    for i in range(snapshots):
        ts = 5000 * (i + 1)
        for m in ids:
            log.commits(actual[m], ts=ts, offset=100 * i)
        log.snap(group_snapshot(ts, "Stable", ids, topics=list(topics)))
        log.snap(topics_snapshot(ts, {t: [100 * i + 50] * n for t, n in topics.items()}))
        state, _ = apply(state, log.take(), ts, config=SMALL)
    return state


def test_state_is_bounded_whatever_the_history() -> None:
    short, long = big_group_state(3, 6, 100), big_group_state(3, 6, 400)
    for state in (short, long):
        assert all(len(h) <= SMALL.end_offset_history for h in state.end_offsets.values())
        assert all(len(c.history) <= SMALL.commit_history for c in state.commits.values())
        assert len(state.collector.states) <= SMALL.snapshot_history
    # four times the history, the same size (up to wider numbers)
    assert len(long.to_json()) <= len(short.to_json()) * 1.15


def test_state_size_fits_ten_thousand_groups() -> None:
    """A typical group (10 members, 2 topics x 12 partitions, full histories) stays small;
    10,000 of them are far below 2 GiB."""
    size = len(big_group_state(10, 12, 60).to_json().encode())
    assert size < 40_000
    assert 10_000 * size < 2**31 / 4


def test_a_pending_lag_status_round_trips_and_older_states_read_without_one() -> None:
    from streaming.tracking.state import CommitEntry

    tp = TopicPartition("Order", 0)
    state = GroupState.new(CLUSTER, GROUP)
    entry = CommitEntry(
        offset=120,
        commit_ts_ms=5_000,
        record_ts_ms=5_000,
        leader_epoch=0,
        history=((5_000, 120),),
        source="log",
        lag_ts_ms=5_001,
        status="OK",
        pending_status=None,  # a verdict lost (stale end offsets): pending too
        pending_since_ts_ms=9_001,
    )
    state.commits[tp] = entry
    data = state.to_dict()
    assert data["commits"]["Order"][0][-2:] == [None, 9_001]
    assert GroupState.from_dict(json.loads(json.dumps(data))).commits[tp] == entry
    assert GroupState.decode(state.encode()).commits[tp] == entry
    # nothing pending: the entry is written as before the hold, and such entries (as every
    # state written before it) read back with nothing pending
    settled = replace(entry, pending_since_ts_ms=None)
    state.commits[tp] = settled
    assert len(state.to_dict()["commits"]["Order"][0]) == 10
    assert GroupState.from_dict(state.to_dict()).commits[tp] == settled
    old = {**data, "commits": {"Order": [data["commits"]["Order"][0][:10]]}}
    back = GroupState.from_dict(old).commits[tp]
    assert (back.status, back.pending_status, back.pending_since_ts_ms) == ("OK", None, None)
    older = {**data, "commits": {"Order": [data["commits"]["Order"][0][:7]]}}
    assert GroupState.from_dict(older).commits[tp].status is None
    with pytest.raises(StateFormatError) as info:
        bad = [*data["commits"]["Order"][0][:10], "WARN", "soon"]
        GroupState.from_dict({**data, "commits": {"Order": [bad]}})
    assert info.value.field == "commits"
