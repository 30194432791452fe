"""Golden ``__consumer_offsets`` records (``tests/fixtures/golden/``): decoded, they say what
the clients said.

Each fixture holds the raw records a Kafka 4.4.0 coordinator wrote for one real group (four
kafka-python groups, one per classic assignor, and a KIP-848 group of two Java members) and
what the members themselves reported: member ids, generations (member epochs), their own
``assignment()``, and the committed offsets (OffsetFetch). ``capture_golden.py`` made them
and defines the checks; here every check runs on every fixture it applies to, the checks
are shown to catch a lie, and the facts the fixtures revealed about the clients are pinned.
``tests/integration/test_golden_live.py`` runs the same checks on a capture made at test
time. Recapture with ``.venv/bin/python tests/fixtures/capture_golden.py``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from assign_core.placement import coordinator_partition
from streaming.codec import decode_sticky_user_data
from streaming.codec.model import (
    ConsumerGroupMetadata,
    CooperativeStickyUserData,
    GroupMetadata,
    OffsetCommit,
)
from tests.fixtures import capture_golden as golden

pytestmark = pytest.mark.unit

Json = dict[str, Any]

FIXTURES: dict[str, Json] = {doc["name"]: doc for doc in golden.load_fixtures()}
CASES = [
    pytest.param(name, check, id=f"{name}:{check.name}")
    for name, doc in FIXTURES.items()
    for check in golden.CHECKS
    if check.applies_to(doc)
]
CLASSIC = [name for name, doc in FIXTURES.items() if doc["group_protocol"] == "classic"]
KIP848 = "kip848-uniform"


def fixture(name: str) -> Json:
    """A copy the test may change."""
    return copy.deepcopy(FIXTURES[name])


def records_of(doc: Json, kind: type[Any]) -> list[tuple[Json, Any]]:
    return [(raw, r) for raw, r in golden.decoded_records(doc) if isinstance(r, kind)]


# --------------------------------------------------------------------------- the fixtures


def test_every_plan_has_a_fixture() -> None:
    assert sorted(FIXTURES) == sorted(plan.name for plan in golden.default_plans())


def test_fixtures_are_small_and_current_format() -> None:
    sizes = {p.name: p.stat().st_size for p in golden.FIXTURE_DIR.glob("*.json")}
    assert sum(sizes.values()) < 128 * 1024, sizes
    for doc in FIXTURES.values():
        assert doc["format"] == golden.FORMAT
        assert doc["broker"]["version"] == "4.4.0"
        assert doc["coordinator_partitions"] == [
            coordinator_partition(doc["group_id"], doc["broker"]["offsets_topic_partitions"])
        ]


@pytest.mark.parametrize(("name", "check"), CASES)
def test_records_agree_with_the_clients(name: str, check: golden.Check) -> None:
    """decodes, one-group, classic-generations, classic-assignment-lines, cooperative-owned,
    classic-ended-empty, kip848-epochs, kip848-revocations, kip848-ended-empty, offsets,
    offset-topic-ids: see each ``check_*`` in capture_golden.py."""
    assert check.run(FIXTURES[name]) == []


# What Kafka 4.4.0 writes, per group: "<record type> v<value version>" or "... tombstone".
EXPECTED_SHAPES = {
    # 1. classic groups: GroupMetadata v3 (not v4, its flexible form) and OffsetCommit v4
    #    (the flexible form, with the topic id tag); no tombstone: an emptied group is a
    #    GroupMetadata record without members.
    **{name: ["GroupMetadata v3", "OffsetCommit v4"] for name in CLASSIC},
    # 2. KIP-848: types 3, 5, 6, 7, 8 and, when members leave, tombstones of their 5, 7, 8;
    #    no ConsumerGroupPartitionMetadata (type 4): 4.x keeps a metadata hash in type 3.
    KIP848: [
        "ConsumerGroupCurrentMemberAssignment tombstone",
        "ConsumerGroupCurrentMemberAssignment v0",
        "ConsumerGroupMemberMetadata tombstone",
        "ConsumerGroupMemberMetadata v0",
        "ConsumerGroupMetadata v0",
        "ConsumerGroupTargetAssignmentMember tombstone",
        "ConsumerGroupTargetAssignmentMember v0",
        "ConsumerGroupTargetAssignmentMetadata v0",
        "OffsetCommit v4",
    ],
}


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_record_shapes(name: str) -> None:
    assert golden.record_signature(FIXTURES[name]) == EXPECTED_SHAPES[name]


# --------------------------------------------------------------------------- the checks bite


def _first_member(doc: Json, point: int = -1) -> Json:
    member: Json = doc["reports"]["stable"][point]["members"][0]
    return member


def _move_a_partition(doc: Json) -> None:
    _first_member(doc)["assignment"].popitem()


def _another_member_id(doc: Json) -> None:
    _first_member(doc)["member_id"] = "C9-0"


def _another_generation(doc: Json) -> None:
    line = next(e for e in doc["reports"]["events"] if e["event"] == "assignment")
    line["generation"] += 100


def _commit_never_written(doc: Json) -> None:
    topic = next(iter(doc["reports"]["committed_offsets"]))
    doc["reports"]["committed_offsets"][topic]["0"] = 1


def _stop_before_the_last_leave(doc: Json) -> None:
    last = max(i for i, r in enumerate(doc["records"]) if r["type"] == "GroupMetadata")
    del doc["records"][last:]


def _swap_java_assignments(doc: Json) -> None:
    two = doc["reports"]["stable"][1]["members"]
    two[0]["assignment"], two[1]["assignment"] = two[1]["assignment"], two[0]["assignment"]


def _drop_tombstones(doc: Json) -> None:
    doc["records"] = [r for r in doc["records"] if r["value"] is not None]


def _cut_a_record_short(doc: Json) -> None:
    raw = next(r for r in doc["records"] if r["type"] == "GroupMetadata" and len(r["value"]) > 80)
    raw["value"] = raw["value"][:80]


def _claim_another_group(doc: Json) -> None:
    doc["group_id"] += "-other"


@pytest.mark.parametrize(
    ("name", "check", "lie"),
    [
        ("range", "classic-generations", _move_a_partition),
        ("sticky", "classic-generations", _another_member_id),
        ("roundrobin", "classic-assignment-lines", _another_generation),
        ("cooperative-sticky", "offsets", _commit_never_written),
        ("range", "classic-ended-empty", _stop_before_the_last_leave),
        (KIP848, "kip848-epochs", _swap_java_assignments),
        (KIP848, "kip848-ended-empty", _drop_tombstones),
        ("sticky", "decodes", _cut_a_record_short),
        ("range", "one-group", _claim_another_group),
    ],
)
def test_checks_catch_a_lie(name: str, check: str, lie: Callable[[Json], None]) -> None:
    doc = fixture(name)
    (found,) = [c for c in golden.CHECKS if c.name == check]
    assert found.run(doc) == []
    lie(doc)
    assert found.run(doc) != []


def test_a_fixture_without_reports_fails() -> None:
    doc = fixture("range")
    doc["reports"]["stable"] = []
    doc["reports"]["committed_offsets"] = {}
    assert golden.check_classic_generations(doc) == [
        "generation: the clients reported no stable point"
    ]
    assert golden.check_offsets(doc)


# --------------------------------------------------------------------------- what we learned


@pytest.mark.parametrize("name", CLASSIC)
def test_classic_group_lifecycle(name: str) -> None:
    """The coordinator writes the empty group at generation 0 (protocol type "") on the first
    JoinGroup, one record per completed SyncGroup, and after the last LeaveGroup one more
    generation without protocol or members; never a tombstone."""
    groups = [r for _, r in records_of(FIXTURES[name], GroupMetadata)]
    first, last = groups[0], groups[-1]
    assert (first.generation, first.protocol_type, first.protocol, first.members) == (
        0,
        "",
        None,
        (),
    )
    assert (last.protocol_type, last.protocol, last.members) == ("consumer", None, ())
    assert [g.generation for g in groups] == list(range(len(groups)))


@pytest.mark.parametrize("name", CLASSIC)
def test_offset_commits_carry_the_topic_id(name: str) -> None:
    """kafka-python commits by topic name; the 4.4.0 coordinator still writes OffsetCommit
    v4 with the topic's id (tag 0)."""
    doc = FIXTURES[name]
    ids = {t: info["topic_id"] for t, info in doc["topics"].items()}
    commits = [r for _, r in records_of(doc, OffsetCommit)]
    assert commits
    assert {(r.topic, r.topic_id) for r in commits} == set(ids.items())


def test_kafka_python_sticky_user_data_is_not_java_readable() -> None:
    """kafka-python 3.0.12 prefixes its StickyAssignor user data with an int16 version
    (``0001``); Java's StickyAssignor writes no version and reads neither schema from such
    bytes, so its previous assignment and generation are lost (schema -1): a Java sticky
    member in a mixed group would not see what kafka-python members held."""
    found = 0
    for _, record in records_of(FIXTURES["sticky"], GroupMetadata):
        for m in record.members:
            data = m.subscription.user_data if m.subscription else None
            if data:
                found += 1
                assert data[:2] == b"\x00\x01"
                assert decode_sticky_user_data(data).schema_version == -1
                assert decode_sticky_user_data(data[2:]).schema_version == 1
    assert found


def test_kafka_python_cooperative_sticky_sends_no_generation() -> None:
    """kafka-python's cooperative-sticky subscriptions are version 1: owned partitions, but
    no generation field (v2) and empty user data (Java puts the generation there), so the
    coordinator's records carry generation -1 for every member."""
    members = [
        m for _, r in records_of(FIXTURES["cooperative-sticky"], GroupMetadata) for m in r.members
    ]
    assert members
    for m in members:
        assert m.subscription is not None
        assert (m.subscription.version, m.subscription.generation_id) == (1, -1)
        assert m.subscription.assignor_data == CooperativeStickyUserData(-1, parsed=False)


def test_kip848_group_epochs() -> None:
    """The KIP-848 group's epochs as the type 3 records show them: every membership change is
    one epoch; when the last member left, the epoch moved once more and the metadata hash
    was reset to 0."""
    doc = FIXTURES[KIP848]
    epochs = [r for _, r in records_of(doc, ConsumerGroupMetadata)]
    stable = [p["generation"] for p in doc["reports"]["stable"]]
    assert [e.epoch for e in epochs] == [*stable, stable[-1] + 1]
    assert all(e.metadata_hash != 0 for e in epochs[:-1])
    assert epochs[-1].metadata_hash == 0
