"""A collector event that names many groups (``topics``, ``end_offsets``, ``poll``) crosses
the decode stage as one row per bucket of its groups, and the stateful step applies it to
each group it names in that bucket: every group gets the observations a row per group gave
it, in the same order, and no other group gets any (:func:`decode_batch`,
:func:`observations_by_group`). That the Python bucket is Spark's:
``tests/spark/test_buckets.py``."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pytest

from streaming.collector import AdminAnswers, build_events
from streaming.collector.changes import Changes
from streaming.config import DEFAULT_CHUNK_BYTES, MIN_CHUNK_BYTES
from streaming.spark.buckets import bucket_of
from streaming.spark.decode import ARROW_ENVELOPE, FAN_OUT_TYPES, decode_batch, observation_of
from streaming.spark.stateful import _kept
from streaming.spark.step_rows import observations_by_group
from streaming.tracking.model import FAN_OUT, Observation, routing_keys
from tests.unit.streaming.codec.wire import i16, i32, i64, string
from tests.unit.streaming.tracking.factories import admin_topics

pytestmark = pytest.mark.unit

S = 1000
#: few buckets, so that each holds several groups
BUCKETS = 8
#: ids of every shape: empty, non-ASCII, long
GROUPS = [f"g{i}" for i in range(30)] + ["", "ö-группа", "組-1", "x" * 300]
TOPICS = {f"t{i}": 3 for i in range(4)}
TOPIC = "rebalance-monitor.membership"
OFFSETS_TOPIC = "__consumer_offsets"


def _answers(ts: int, groups: list[str], *, generation: int) -> AdminAnswers:
    """One poll of ``groups``, each Stable with one member on a partition of one of the
    topics; ``generation`` names the members (a new one: every group changed)."""

    def described(i: int, group_id: str) -> dict[str, Any]:
        topic = f"t{i % len(TOPICS)}"
        return {
            "group_id": group_id,
            "group_state": "Stable",
            "protocol_type": "consumer",
            "protocol_data": "range",
            "error": None,
            "members": [
                {
                    "member_id": f"m-{generation}",
                    "group_instance_id": None,
                    "client_id": "c",
                    "client_host": "/10.0.0.1",
                    "member_metadata": {"topics": [topic]},
                    "member_assignment": {
                        "assigned_partitions": [{"topic": topic, "partitions": [0, 1, 2]}]
                    },
                }
            ],
        }

    return AdminAnswers(
        snapshot_ts_ms=ts,
        cluster={"cluster_id": "c1", "controller_id": 1, "brokers": []},
        groups=[{"group_id": g, "group_state": "Stable", "group_type": "classic"} for g in groups],
        descriptions={g: described(i, g) for i, g in enumerate(groups)},
        topics=admin_topics(TOPICS),
        end_offsets={(t, p): ts // 100 for t, n in TOPICS.items() for p in range(n)},
        end_offsets_ts_ms=ts,
    )


def records(chunk_bytes: int = DEFAULT_CHUNK_BYTES) -> list[dict[str, Any]]:
    """Envelope rows of a few polls of :data:`GROUPS`: the collector's records as it
    publishes them, version 1's (a ``group`` event per group, a ``topics`` event), then
    version 2's (``group`` events when a group changed, heartbeats, ``poll``, ``topics`` and
    ``end_offsets`` events); and after each poll every group's offset commits of its
    partitions in ``__consumer_offsets`` (lag: the end offsets of the events that name many
    groups, against each group's commits); ``chunk_bytes``: the collector's bound on a
    ``topics`` or ``end_offsets`` record (small: the events in chunks)."""
    membership = [
        (S, *e.encode())
        for e in build_events(_answers(S, GROUPS, generation=0), cluster="c", snapshot_id="v1")
    ]
    changes = Changes(
        cluster="c",
        heartbeat_interval_ms=3 * S,
        full_interval_ms=0,
        poll_event_interval_ms=0,
        chunk_bytes=chunk_bytes,
    )
    offsets = []
    for i in range(6):
        ts = (i + 2) * S
        groups = GROUPS if i < 4 else GROUPS[::2]  # half of them gone at the end
        answers = _answers(ts, groups, generation=i // 3)
        membership += [(ts, *e.encode()) for e in changes.events(answers, snapshot_id=f"{i}")]
        for g, group_id in enumerate(groups):
            for p in range(3):
                key = i16(1) + string(group_id) + string(f"t{g % len(TOPICS)}") + i32(p)
                value = i16(3) + i64(ts // 100 - 5 - p) + i32(-1) + string("") + i64(ts)
                offsets.append((ts + 500, key, value))

    def rows(source: str, topic: str, keyed: list[tuple[int, bytes, bytes | None]]) -> Any:
        for offset, (ts, key, value) in enumerate(keyed):
            yield {"source": source, "topic": topic, "partition": 0, "offset": offset,
                   "timestamp_ms": ts + 10, "key": key, "value": value}  # fmt: skip

    return [*rows("membership", TOPIC, membership), *rows("offsets", OFFSETS_TOPIC, offsets)]


def _envelope(rows: list[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=ARROW_ENVELOPE)


def _one_by_one(table: pa.Table) -> dict[str, list[Observation]]:
    """What each group must get: every record's observation, for each of its routing keys,
    in record order (what a row per group gave)."""
    out: dict[str, list[Observation]] = {}
    for row in table.to_pylist():
        obs = observation_of(
            row["source"],
            row["key"],
            row["value"],
            partition=row["partition"],
            offset=row["offset"],
            timestamp_ms=row["timestamp_ms"],
        )
        for group_id in routing_keys(obs.payload):
            out.setdefault(group_id, []).append(obs)
    return out


def _by_bucket(decoded: pa.Table) -> dict[int, Any]:
    """The decoded rows of each bucket, as the stateful step gets them (pandas, in order;
    the rows that name no group, tombstones here, are dropped before it)."""
    frame = decoded.to_pandas()
    frame = frame[frame["group_id"].notna()]
    buckets = frame["group_id"].map(lambda g: bucket_of(g, BUCKETS))
    return {int(b): part for b, part in frame.groupby(buckets, sort=True)}


def _stepped(
    decoded: pa.Table, keep: Callable[[str], bool] | None = None
) -> dict[str, list[Observation]]:
    """Each group's observations as the buckets' steps build them (the group filter
    ``keep`` as the processor applies it), checking that no group is in two buckets."""
    out: dict[str, list[Observation]] = {}
    for frame in _by_bucket(decoded).values():
        frames = [frame if keep is None else _kept(frame, keep)]
        by_group, failed = observations_by_group(frames, buckets=BUCKETS, keep=keep)
        assert not failed
        assert not by_group.keys() & out.keys()
        out.update(by_group)
    return out


def test_an_event_naming_many_groups_is_a_row_per_bucket_of_its_groups() -> None:
    table = _envelope(records())
    decoded = decode_batch(table, buckets=BUCKETS).to_pylist()
    assert all(r["error"] is None for r in decoded)
    fan_out = 0
    for record in table.to_pylist():
        at = (record["topic"], record["offset"])
        rows = [r for r in decoded if (r["topic"], r["offset"]) == at]
        obs = observation_of(record["source"], record["key"], record["value"], partition=0,
                             offset=record["offset"], timestamp_ms=0)  # fmt: skip
        named = routing_keys(obs.payload)
        if not isinstance(obs.payload, FAN_OUT):
            assert [r["group_id"] for r in rows] == (list(named) or [None])  # None: a tombstone
            continue
        fan_out += 1
        assert {r["record_type"] for r in rows} <= FAN_OUT_TYPES
        buckets = {bucket_of(g, BUCKETS) for g in named}
        # one row per bucket its groups are in, keyed by the smallest of them there
        assert len(rows) == len(buckets) > 1
        assert {bucket_of(r["group_id"], BUCKETS) for r in rows} == buckets
        for r in rows:
            b = bucket_of(r["group_id"], BUCKETS)
            assert r["group_id"] == min(g for g in named if bucket_of(g, BUCKETS) == b)
            assert r["value"] == record["value"]  # the event itself, once per bucket
    # the version 1 and 2 topics events, a poll event and end_offsets events
    kinds = {r["record_type"] for r in decoded} & FAN_OUT_TYPES
    assert kinds == FAN_OUT_TYPES and fan_out >= 8
    assert len(decoded) < len(table) * BUCKETS


@pytest.mark.parametrize("chunk_bytes", [DEFAULT_CHUNK_BYTES, MIN_CHUNK_BYTES])
def test_each_group_gets_what_a_row_per_group_gave_it_once_in_order(chunk_bytes: int) -> None:
    table = _envelope(records(chunk_bytes))
    chunks = {
        json.loads(r["value"]).get("chunk", 0)
        for r in table.to_pylist()
        if r["source"] == "membership" and r["value"] is not None
    }
    assert (max(chunks) > 1) == (chunk_bytes == MIN_CHUNK_BYTES)  # split into chunks or not
    expected = _one_by_one(table)
    got = _stepped(decode_batch(table, buckets=BUCKETS))
    assert set(got) == set(GROUPS) == set(expected)
    for group_id in GROUPS:
        assert got[group_id] == expected[group_id], group_id
    # and an event reaches the groups it names, not the others (the last polls name half)
    events = {o for observations in expected.values() for o in observations}
    fan_out = [o for o in events if isinstance(o.payload, FAN_OUT)]
    assert any(set(routing_keys(o.payload)) < set(GROUPS) for o in fan_out)
    for obs in fan_out:
        assert {g for g in GROUPS if obs in got[g]} == set(routing_keys(obs.payload))


def test_the_group_filter_applies_to_each_group_an_event_reaches() -> None:
    """The job's group filter drops the rows of the groups it rejects; an event's row per
    bucket is kept, whichever group keys it, and reaches the bucket's groups that pass."""
    table = _envelope(records())
    decoded = decode_batch(table, buckets=BUCKETS)
    heads = {r["group_id"] for r in decoded.to_pylist() if r["record_type"] in FAN_OUT_TYPES}

    def keep(group_id: str) -> bool:
        return group_id not in heads  # every row of an event keyed by a rejected group

    expected = _one_by_one(table)
    got = _stepped(decoded, keep)
    assert set(got) == {g for g in GROUPS if keep(g)} and got
    for group_id, observations in got.items():
        assert observations == expected[group_id], group_id


@pytest.mark.parametrize("parts", [1, 9, 10**9])
def test_the_decoded_rows_come_in_batches_of_bounded_bytes(
    monkeypatch: pytest.MonkeyPatch, parts: int
) -> None:
    """Each row of an event that names many groups carries the event: the decoded rows
    come in batches of at most ``BATCH_BYTES`` of keys and values (a bigger row alone), so
    no Arrow binary column passes its 2 GiB, whatever the backlog; the rows are the same.
    ``BATCH_BYTES`` here: the rows' bytes over ``parts``."""
    from streaming.spark import decode as decode_module

    def size(batch: pa.RecordBatch) -> int:
        return sum(len(v or b"") for c in ("key", "value") for v in batch.column(c).to_pylist())

    table = _envelope(records())
    whole = list(decode_module.decode_batches(iter(table.to_batches()), buckets=BUCKETS))
    total = sum(map(size, whole))
    limit = max(1, total // parts)
    monkeypatch.setattr(decode_module, "BATCH_BYTES", limit)
    batches = list(decode_module.decode_batches(iter(table.to_batches()), buckets=BUCKETS))
    assert pa.Table.from_batches(batches).to_pylist() == pa.Table.from_batches(whole).to_pylist()
    assert all(size(b) <= limit or b.num_rows == 1 for b in batches)
    if parts == 1:
        assert len(batches) == 1
    else:
        assert len(batches) >= min(parts, sum(b.num_rows for b in batches)) > 1
