"""The collector's membership events: parsing, tolerance of additive fields, field errors."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from assign_core.model import TopicPartition
from streaming.collector import AdminAnswers, build_events
from streaming.tracking import (
    GroupSnapshot,
    MembershipEventError,
    TopicsSnapshot,
    UnsupportedEvent,
    parse_membership_event,
    parse_membership_json,
    routing_keys,
)

pytestmark = pytest.mark.unit

DOCS = Path(__file__).resolve().parents[4] / "docs" / "events.md"


def doc_examples(version: int = 1) -> list[dict[str, Any]]:
    """The JSON examples of one schema version in docs/events.md (version 1: the group
    event, the topics event)."""
    blocks = re.findall(r"```json\n(.*?)```", DOCS.read_text(encoding="utf-8"), re.S)
    return [e for e in map(json.loads, blocks) if e["schema_version"] == version]


def test_docs_examples_parse() -> None:
    group_json, topics_json = doc_examples()
    group = parse_membership_event(group_json)
    assert isinstance(group, GroupSnapshot)
    assert (group.group_id, group.state, group.protocol_name) == ("orders", "Stable", "range")
    assert group.members is not None and len(group.members) == 2
    static, dynamic = group.members
    assert static.group_instance_id == "static-1"
    assert static.assignment == (TopicPartition("orders", 0), TopicPartition("orders", 1))
    assert static.owned_partitions is None
    assert dynamic.owned_partitions == () and dynamic.subscription_generation_id == -1
    assert group.committed_offsets is not None
    assert group.committed_offsets[0].lag == 2
    assert routing_keys(group) == ("orders",)

    topics = parse_membership_event(topics_json)
    assert isinstance(topics, TopicsSnapshot)
    assert topics.group_ids == ("orders",)
    (orders,) = topics.topics
    assert (orders.topic_id, orders.partition_count) == ("fal_ByPvSSanabty8_mcXw", 3)
    assert [p.end_offset for p in orders.partitions] == [42, 17, 9]
    assert orders.partitions[0].replica_racks == ("r1",)
    assert routing_keys(topics) == ("orders",)


def test_collector_output_parses() -> None:
    answers = AdminAnswers(
        snapshot_ts_ms=5,
        cluster={"cluster_id": "x", "controller_id": 1, "brokers": []},
        groups=[{"group_id": "g", "group_type": "consumer", "protocol_type": "consumer",
                 "group_state": "Stable"}],
    )  # fmt: skip
    events = [
        parse_membership_json(e.encode()[1])
        for e in build_events(answers, cluster="c", snapshot_id="s")
    ]
    group, topics = events
    assert isinstance(group, GroupSnapshot) and group.membership_source == "consumer_offsets"
    assert group.members is None and group.committed_offsets is None
    assert isinstance(topics, TopicsSnapshot) and topics.topics == ()


def test_session_timeout_of_a_kip848_group() -> None:
    """Added within version 1: given, it is read; missing (an older collector), null."""
    answers = AdminAnswers(
        snapshot_ts_ms=5,
        cluster=None,
        groups=[{"group_id": "g", "group_type": "consumer", "group_state": "Stable"}],
        session_timeouts={"g": 6000},
    )
    group = parse_membership_json(
        build_events(answers, cluster="c", snapshot_id="s")[0].encode()[1]
    )
    assert isinstance(group, GroupSnapshot) and group.session_timeout_ms == 6000
    group_json, _ = doc_examples()
    g = copy.deepcopy(group_json)
    del g["session_timeout_ms"]
    parsed = parse_membership_event(g)
    assert isinstance(parsed, GroupSnapshot) and parsed.session_timeout_ms is None
    with pytest.raises(MembershipEventError) as info:
        parse_membership_event({**group_json, "session_timeout_ms": "6 s"})
    assert info.value.field == "session_timeout_ms"


def test_additive_fields_are_ignored() -> None:
    group_json, topics_json = doc_examples()
    g = copy.deepcopy(group_json)
    g["new_top_level"] = {"anything": [1, 2]}
    g["members"][0]["new_member_field"] = 7
    t = copy.deepcopy(topics_json)
    t["topics"][0]["partitions"][0]["new_partition_field"] = None
    assert parse_membership_event(g) == parse_membership_event(group_json)
    assert parse_membership_event(t) == parse_membership_event(topics_json)


def test_missing_nullable_fields_read_as_null() -> None:
    group_json, _ = doc_examples()
    g = copy.deepcopy(group_json)
    del g["kafka_cluster_id"], g["members"][0]["rack_id"], g["committed_offsets"]
    parsed = parse_membership_event(g)
    assert isinstance(parsed, GroupSnapshot)
    assert parsed.kafka_cluster_id is None and parsed.committed_offsets is None


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda e: e.update(snapshot_ts_ms="soon"), "snapshot_ts_ms"),
        (lambda e: e.pop("group_id"), "group_id"),
        (lambda e: e["members"][1].update(member_id=3), "members[1].member_id"),
        (
            lambda e: e["members"][0]["assignment"][0].update(partitions=["0"]),
            "members[0].assignment[0].partitions[0]",
        ),
        (lambda e: e.update(members={}), "members"),
        (lambda e: e["committed_offsets"][0].update(offset=None), "committed_offsets[0].offset"),
        (lambda e: e.update(schema_version="1"), "schema_version"),
    ],
)
def test_errors_name_the_field(mutate: Any, field: str) -> None:
    group_json, _ = doc_examples()
    e = copy.deepcopy(group_json)
    mutate(e)
    with pytest.raises(MembershipEventError) as info:
        parse_membership_event(e)
    assert info.value.field == field


def test_unknown_versions_and_types_are_unsupported_not_errors() -> None:
    group_json, _ = doc_examples()
    v3 = dict(group_json, schema_version=3)
    other = dict(group_json, event_type="brokers")
    for e in (v3, other):
        parsed = parse_membership_event(e)
        assert isinstance(parsed, UnsupportedEvent)
        assert routing_keys(parsed) == ()


def test_not_json_is_an_error() -> None:
    with pytest.raises(MembershipEventError):
        parse_membership_json(b"{nope")
    with pytest.raises(MembershipEventError):
        parse_membership_event([1, 2])


def test_version_2_docs_examples_parse() -> None:
    from streaming.tracking.model import EndOffsetsSnapshot, GroupHeartbeat, GroupsPolled

    group, poll, beat, offsets = (parse_membership_event(e) for e in doc_examples(2))

    assert isinstance(group, GroupSnapshot) and group.committed_offsets is None
    assert group.digest == "9f3b2c1d0e4a5b6c"
    assert isinstance(poll, GroupsPolled) and routing_keys(poll) == ("orders", "payments")
    assert isinstance(beat, GroupHeartbeat) and beat.digest == group.digest
    assert isinstance(offsets, EndOffsetsSnapshot) and not offsets.full
    assert offsets.offsets == (("orders", 2, 12),) and offsets.moves == (("orders", 0, 31),)
    assert offsets.previous_end_offsets_ts_ms == 1795238759426
    assert routing_keys(offsets) == ("orders",)


def test_a_tombstone_is_skipped_not_an_error() -> None:
    assert isinstance(parse_membership_json(None), UnsupportedEvent)
