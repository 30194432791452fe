"""kafka-python's ``sticky`` and ``cooperative-sticky`` against kafka-python's own classes.

The installed kafka-python's ``StickyPartitionAssignor`` and ``CooperativeStickyAssignor``
are called on many generated groups, each played over several generations: members join,
leave, change or reorder their subscriptions, topics grow, disappear or come back, and some
members rejoin with a stale claim (an older generation, the same generation as another
claim, generation 0, or user data kafka-python cannot parse). Every member's subscription
goes through kafka-python's own encoding (its ``StickyAssignorUserData`` for ``sticky``, the
version 1 subscription's owned partitions for ``cooperative-sticky``) and is decoded by it,
as the leader receives it. Our assignor, making its hash-order choices as this process's
``set`` does (``native=True``), must give identical lists, order included, or fail where
kafka-python fails; and wherever a choice was made, kafka-python's answer must be one of the
answers :meth:`alternatives` enumerates (the tracker's premise: it cannot know the leader's
hash seed). Kafka's own sticky test scenarios are played too.
"""

from __future__ import annotations

import doctest
import random
from collections.abc import Mapping, Sequence
from dataclasses import replace
from types import ModuleType

import pytest
from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
from kafka.coordinator.assignors.sticky.user_data import StickyAssignorUserData
from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription
from kafka.structs import TopicPartition as KafkaTopicPartition

from assign_core.assignors import (
    _kafka_python_sticky,
    kafka_python_cooperative_sticky,
    kafka_python_sticky,
)
from assign_core.assignors.kafka_python_cooperative_sticky import (
    KafkaPythonCooperativeStickyAssignor,
)
from assign_core.assignors.kafka_python_sticky import KafkaPythonStickyAssignor
from assign_core.assignors.registry import get_assignor
from assign_core.errors import AssignmentError
from assign_core.model import AssignmentResult, GroupSpec, Member, TopicPartition
from tests.unit.assign_core.test_sticky import KAFKA_SCENARIOS

pytestmark = pytest.mark.unit

GROUPS = 200  # generated groups per strategy, each played over several generations
ROUNDS = 6
CLAIMS = 400  # groups with random claims per strategy
NAMES = ["t0", "t1", "Order", "b", "z9", "é"]
UNPARSABLE = b"\x00\x01\x00\x00\x00\x09\x00"  # kafka-python's version 1, then a short struct


class _Cluster:
    """What kafka-python's sticky executor reads from ``ClusterMetadata``: the leader's
    metadata holds the group's subscribed topics."""

    def __init__(self, topics: Mapping[str, int]) -> None:
        self._topics = dict(topics)

    def topics(self) -> set[str]:
        return set(self._topics)

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        n = self._topics.get(topic)
        return None if n is None else set(range(n))


class _Member:
    """kafka-python's ``JoinGroupResponseMember`` shape: member_id, metadata."""

    def __init__(self, member_id: str, subscription: bytes) -> None:
        self.member_id = member_id
        self.group_instance_id = None
        self.metadata = ConsumerProtocolSubscription.decode(subscription)


def _subscription(cooperative: bool, m: Member, user_data: bytes | None) -> bytes:
    """The member's subscription as kafka-python writes it."""
    if cooperative:
        by_topic: dict[str, list[int]] = {}
        for tp in m.owned_partitions:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        owned = [
            ConsumerProtocolSubscription.TopicPartition(topic=t, partitions=ps)
            for t, ps in by_topic.items()
        ]
        wire = ConsumerProtocolSubscription(
            version=1, topics=list(m.topics), user_data=b"", owned_partitions=owned
        )
        return bytes(wire.encode())
    if user_data is not None:
        wire = ConsumerProtocolSubscription(version=0, topics=list(m.topics), user_data=user_data)
        return bytes(wire.encode())
    held = [KafkaTopicPartition(*tp) for tp in m.owned_partitions]
    if m.generation is None and not held:
        wire = StickyPartitionAssignor._metadata(list(m.topics), None)
    elif m.generation is None:  # version 0 user data, without generation
        by_topic: dict[str, list[int]] = {}
        for tp in m.owned_partitions:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        v0 = StickyAssignorUserData(previous_assignment=list(by_topic.items()), version=0)
        wire = ConsumerProtocolSubscription(
            version=0, topics=list(m.topics), user_data=bytes(v0.encode())
        )
    else:
        wire = StickyPartitionAssignor._metadata(list(m.topics), held, m.generation)
    return bytes(wire.encode())


def _theirs(
    cooperative: bool, spec: GroupSpec, raw: Mapping[str, bytes]
) -> dict[str, list[TopicPartition]]:
    subscribed = {t for m in spec.members for t in m.topics}
    cluster = _Cluster({t: n for t, n in spec.topics.items() if t in subscribed})
    members = [
        _Member(m.member_id, _subscription(cooperative, m, raw.get(m.member_id)))
        for m in spec.members
    ]
    assignor = CooperativeStickyAssignor() if cooperative else StickyPartitionAssignor()
    answer = assignor.assign(cluster, members)
    return {
        member_id: [TopicPartition(t, p) for t, ps in a.assigned_partitions for p in ps]
        for member_id, a in answer.items()
    }


def _ours(cooperative: bool) -> KafkaPythonStickyAssignor | KafkaPythonCooperativeStickyAssignor:
    if cooperative:
        return KafkaPythonCooperativeStickyAssignor(native=True)
    return KafkaPythonStickyAssignor(native=True)


class _Tally:
    def __init__(self) -> None:
        self.identical = self.failing = self.hash_choices = self.enumerated = self.unlike_java = 0


def _compare(
    cooperative: bool,
    spec: GroupSpec,
    tally: _Tally,
    raw: Mapping[str, bytes] | None = None,
) -> dict[str, list[TopicPartition]] | None:
    """Both answers for ``spec``; asserts they are identical (or both fail). ``raw``: user
    data written as is (sticky), for members whose claim kafka-python cannot parse."""
    raw = raw or {}
    parsed = GroupSpec(
        topics=spec.topics,
        members=tuple(
            Member(m.member_id, m.topics)
            if m.member_id in raw
            else replace(m, owned_partitions=_as_on_the_wire(m.owned_partitions))
            for m in spec.members
        ),
    )
    ours = _ours(cooperative)
    picks = _kafka_python_sticky.Picks(native=True)
    try:
        mine = ours._assign(parsed, picks).assignment
    except AssignmentError:
        with pytest.raises(Exception):  # noqa: B017 - kafka-python's own error type varies
            _theirs(cooperative, spec, raw)
        tally.failing += 1
        return None
    theirs = _theirs(cooperative, spec, raw)
    assert mine == theirs, spec
    tally.identical += 1
    if picks.options:
        tally.hash_choices += 1
        answers, complete = ours.alternatives(parsed, 64)
        if complete:
            tally.enumerated += 1
            assert any(isinstance(a, AssignmentResult) and a.assignment == theirs for a in answers)
    try:
        java = get_assignor("cooperative-sticky" if cooperative else "sticky").assign(parsed)
    except AssignmentError:  # Java's throws on some of these claims
        tally.unlike_java += 1
    else:
        tally.unlike_java += any(set(java.assignment[m]) != set(theirs[m]) for m in theirs)
    return theirs


def _as_on_the_wire(owned: Sequence[TopicPartition]) -> tuple[TopicPartition, ...]:
    """A claim in the order the leader decodes it: grouped by topic, topics in the order
    they first appear."""
    by_topic: dict[str, list[TopicPartition]] = {}
    for tp in owned:
        by_topic.setdefault(tp.topic, []).append(tp)
    return tuple(tp for tps in by_topic.values() for tp in tps)


def _topics(rnd: random.Random) -> dict[str, int]:
    return {t: rnd.randint(1, 12) for t in rnd.sample(NAMES, k=rnd.randint(1, 4))}


def _subscribe(rnd: random.Random, names: Sequence[str], common: Sequence[str] | None) -> tuple:
    if common is not None:
        picked = list(common)
        if rnd.random() < 0.2:
            rnd.shuffle(picked)  # the same topics in another order: not "identical"
        return tuple(picked)
    return tuple(rnd.sample(list(names), k=rnd.randint(1, min(3, len(names)))))


def _play(cooperative: bool, rnd: random.Random, tally: _Tally) -> None:
    """One group over ``ROUNDS`` generations."""
    topics = _topics(rnd)
    common = list(topics) if rnd.random() < 0.5 else None
    serial = 0

    def new_member() -> Member:
        nonlocal serial
        serial += 1
        member_id = f"{rnd.choice('acmxzC')}{serial}-{rnd.randint(0, 999)}"
        return Member(member_id, _subscribe(rnd, list(topics), common))

    members = [new_member() for _ in range(rnd.randint(1, 8))]
    history: list[tuple[int, dict[str, list[TopicPartition]]]] = []
    generation = rnd.choice([0, 1, 5])
    for _ in range(ROUNDS):
        raw: dict[str, bytes] = {}
        if not cooperative and rnd.random() < 0.1 and members:
            raw[rnd.choice(members).member_id] = rnd.choice([UNPARSABLE, b"\x00\x00"])
        answer = _compare(
            cooperative, GroupSpec(topics=dict(topics), members=tuple(members)), tally, raw
        )
        if answer is None:
            return
        history.append((generation, answer))
        generation += 1
        # the next generation's membership
        if rnd.random() < 0.3 and len(members) > 1:
            members.pop(rnd.randrange(len(members)))
        if rnd.random() < 0.3:
            members.insert(rnd.randrange(len(members) + 1), new_member())
        if rnd.random() < 0.15:
            grown = rnd.choice(list(topics))
            topics[grown] += rnd.randint(1, 3)
        if rnd.random() < 0.08 and len(topics) > 1:
            del topics[rnd.choice(list(topics))]
        if rnd.random() < 0.1:
            topics[rnd.choice(NAMES)] = rnd.randint(1, 8)
        if common is not None and rnd.random() < 0.1:
            common = list(topics)
        claimed: list[Member] = []
        for m in members:
            subscription = m.topics
            if rnd.random() < 0.1:
                subscription = _subscribe(rnd, list(topics), None)
            gen, lists = history[-1]
            if len(history) > 1 and rnd.random() < 0.25:
                gen, lists = history[-2]  # a stale claim, from an older generation
            owned = lists.get(m.member_id, [])
            if rnd.random() < 0.05 and history[-1][1]:
                other = rnd.choice(list(history[-1][1].values()))
                owned = owned + [tp for tp in other if tp not in owned]  # a double claim
            if cooperative:
                claimed.append(Member(m.member_id, subscription, owned_partitions=tuple(owned)))
            else:
                joined = m.member_id not in lists and not owned
                claimed.append(
                    Member(
                        m.member_id,
                        subscription,
                        owned_partitions=tuple(owned),
                        generation=None if joined else gen,
                    )
                )
        members = claimed


@pytest.mark.parametrize("cooperative", [False, True], ids=["sticky", "cooperative-sticky"])
def test_matches_kafka_pythons_own_assignor(cooperative: bool) -> None:
    tally = _Tally()
    rnd = random.Random(f"kafka-python {cooperative}")
    for _ in range(GROUPS):
        _play(cooperative, rnd, tally)
    print(
        f"kafka-python {'cooperative-sticky' if cooperative else 'sticky'}: "
        f"{tally.identical} identical, {tally.failing} failing in both, "
        f"{tally.hash_choices} with hash-order choices ({tally.enumerated} enumerated), "
        f"{tally.unlike_java} unlike Java's"
    )
    assert tally.identical >= GROUPS * 3 and tally.unlike_java > 0
    assert tally.hash_choices > 0 or cooperative  # its version 1 claims carry no generation


def _claims(rnd: random.Random, cooperative: bool) -> GroupSpec:
    """A group whose members claim random partitions at a few generations: many partitions
    claimed twice, which is where kafka-python's hash-order choices are made."""
    topics = _topics(rnd)
    every = [TopicPartition(t, p) for t, n in topics.items() for p in range(n + 2)]
    common = list(topics) if rnd.random() < 0.5 else None
    members = []
    for i in range(rnd.randint(2, 7)):
        owned = tuple(rnd.sample(every, k=rnd.randint(0, len(every))))
        generation = None if cooperative else rnd.choice([None, 0, 1, 2, 3])
        members.append(
            Member(
                f"{rnd.choice('acmxzC')}{i}",
                _subscribe(rnd, list(topics), common),
                owned_partitions=owned if generation is not None or cooperative else (),
                generation=generation,
            )
        )
    return GroupSpec(topics=topics, members=tuple(members))


@pytest.mark.parametrize("cooperative", [False, True], ids=["sticky", "cooperative-sticky"])
def test_matches_on_random_claims(cooperative: bool) -> None:
    tally = _Tally()
    rnd = random.Random(f"claims {cooperative}")
    for _ in range(CLAIMS):
        _compare(cooperative, _claims(rnd, cooperative), tally)
    print(
        f"kafka-python {'cooperative-sticky' if cooperative else 'sticky'}, random claims: "
        f"{tally.identical} identical, {tally.failing} failing in both, "
        f"{tally.hash_choices} with hash-order choices ({tally.enumerated} enumerated), "
        f"{tally.unlike_java} unlike Java's"
    )
    assert tally.identical + tally.failing == CLAIMS
    assert tally.enumerated > (0 if cooperative else CLAIMS // 10)


@pytest.mark.parametrize("cooperative", [False, True], ids=["sticky", "cooperative-sticky"])
@pytest.mark.parametrize("spec", [pytest.param(s, id=name) for name, s, _ in KAFKA_SCENARIOS])
def test_kafka_scenarios(cooperative: bool, spec: GroupSpec) -> None:
    tally = _Tally()
    if cooperative:  # version 1 subscriptions carry no generation
        spec = GroupSpec(
            topics=spec.topics,
            members=tuple(
                Member(m.member_id, m.topics, owned_partitions=m.owned_partitions)
                for m in spec.members
            ),
        )
    _compare(cooperative, spec, tally)
    assert tally.identical == 1


@pytest.mark.parametrize("module", [kafka_python_sticky, kafka_python_cooperative_sticky])
def test_worked_examples(module: ModuleType) -> None:
    failures, tried = doctest.testmod(module, raise_on_error=False)
    assert tried > 0 and failures == 0


def test_the_default_choices_do_not_depend_on_the_process() -> None:
    """Without ``native`` every hash-order choice takes the first candidate in (topic,
    partition) order: the first of :meth:`alternatives`."""
    c = "Order"
    spec = GroupSpec(
        topics={c: 6},
        members=(
            Member(
                "A",
                (c,),
                owned_partitions=tuple(TopicPartition(c, p) for p in range(6)),
                generation=3,
            ),
            Member(
                "B",
                (c,),
                owned_partitions=tuple(TopicPartition(c, p) for p in range(4)),
                generation=2,
            ),
            Member("C", (c,)),
        ),
    )
    answers, complete = KafkaPythonStickyAssignor().alternatives(spec, 64)
    assert complete and len(answers) > 1
    first = answers[0]
    assert isinstance(first, AssignmentResult)
    assert KafkaPythonStickyAssignor().assign(spec) == first
    distinct = {
        tuple(map(tuple, a.assignment.values())) for a in answers if isinstance(a, AssignmentResult)
    }
    assert len(distinct) > 1  # the leader's hash order decides which partitions move
