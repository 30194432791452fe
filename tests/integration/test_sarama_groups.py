"""Sarama groups on the real broker: the tracker never calls a healthy group divergent.

Real Sarama members (``tests/sarama``, built with ``go`` into ``.cache/sarama``; the test is
skipped without ``go``) play the scenarios of the kafka-python tier
(``test_kafka_python_sticky_groups.play``: joins of static and dynamic members, a member
paused past its session, a leave, a crash, a join) with each of Sarama's balance strategies
(Sarama has no cooperative protocol). Every generation the broker recorded is given to the
tracker, which must never call the group divergent; Java's assignor of the same strategy is
counted against the recorded assignment, and how the tracker identified the leader, both
printed. Every rebalance's cause is held against the broker's logged reason.
"""

from __future__ import annotations

from collections import Counter

import pytest

from assign_core.assignors import get_assignor
from assign_core.errors import AssignmentError
from streaming.kafka_local import BrokerConfig, BrokerInfo
from streaming.tracking.expected import classic_specs, flatten
from tests.golang import build
from tests.integration.java_groups import assert_causes_agree
from tests.integration.test_franz_go_groups import member_command
from tests.integration.test_kafka_python_sticky_groups import (
    SCENARIOS,
    TOPICS,
    leader_counts,
    play_all,
)
from tests.integration.test_kafka_python_sticky_groups import topics as topics
from tests.integration.test_librdkafka_assignors import group_records, tracker_verdict

#: The client library the groups run, in the printed counts.
LIBRARY = "Sarama"

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(900)]

STRATEGIES = ("range", "roundrobin", "sticky")


@pytest.fixture(scope="module")
def played(kafka_broker: BrokerInfo, topics: dict[str, int]) -> dict[str, list[str]]:
    assert topics == TOPICS
    binary = build("sarama", "sarama/member")
    return play_all(kafka_broker.bootstrap_servers, STRATEGIES, SCENARIOS, member_command(binary))


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_sarama_groups_are_never_called_divergent(
    kafka_broker: BrokerInfo, played: dict[str, list[str]], strategy: str
) -> None:
    generations = like_java = judged = divergent = 0
    identified: Counter[str | None] = Counter()
    shapes: set[tuple[int, str]] = set()
    for group in played[strategy]:
        for record in group_records(kafka_broker.bootstrap_servers, group):
            leader = next(m for m in record.members if m.member_id == record.leader)
            sub = leader.subscription
            assert sub is not None
            shapes.add((sub.version, "null" if sub.user_data is None else sub.user_data.hex()[:16]))
            counts = leader_counts(record)
            implementation, own = tracker_verdict(record, counts)
            identified[implementation] += 1
            own_spec, _ = classic_specs(
                record, topics=counts, racks={}, topic_ids={}, previous={},
                previous_generation=None,
            )  # fmt: skip
            recorded = {
                m.member_id: set(flatten(m.assignment.assigned_partitions if m.assignment else ()))
                for m in record.members
            }
            generations += 1
            try:
                java = get_assignor(strategy).assign(own_spec)
            except AssignmentError:
                java = None
            if java is not None and all(set(java.assignment[m]) == recorded[m] for m in recorded):
                like_java += 1
            judged += own.divergent is not None  # type: ignore[attr-defined]
            divergent += own.divergent is True  # type: ignore[attr-defined]
    print(
        f"Sarama {strategy}: {generations} generations; Java's answer identical in "
        f"{like_java}; identified as {dict(identified)}; the tracker judged {judged}, "
        f"divergent {divergent}; leader subscriptions (version, user data) {sorted(shapes)}"
    )
    assert generations >= SCENARIOS * 6
    assert divergent == 0


def test_every_classic_cause_agrees_with_the_broker(
    kafka_broker: BrokerInfo, kafka_broker_config: BrokerConfig, played: dict[str, list[str]]
) -> None:
    """Every rebalance of the played groups against the reason the group coordinator logged
    when it started it (``tests/broker_log.py``)."""
    assert_causes_agree(
        LIBRARY, kafka_broker.bootstrap_servers, kafka_broker_config.log_path, played
    )
