"""Sarama groups on the real broker: the tracker never calls a healthy group divergent.

Real Sarama members (``tests/sarama``, built with ``go`` into ``.cache/sarama``; the test is
skipped without ``go``) play the scenarios of the kafka-python tier
(``test_kafka_python_sticky_groups.play``: joins of static and dynamic members, a member
paused past its session, a leave, a crash, a join) with each of Sarama's balance strategies
(Sarama has no cooperative protocol). Every generation the broker recorded is given to the
tracker, which must never call the group divergent; Java's assignor of the same strategy is
counted against the recorded assignment, and how the tracker identified the leader, both
printed. Sarama's ``sticky`` (not modelled: its answer varies with Go's map order) is judged
as Java's where that matches, else left without a verdict that says why. Every rebalance's
cause is held against the broker's logged reason.
"""

from __future__ import annotations

from collections import Counter

import pytest

from streaming.kafka_local import BrokerConfig, BrokerInfo
from tests.golang import build
from tests.integration.java_groups import assert_causes_agree
from tests.integration.test_franz_go_groups import judge_generations, member_command
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
    judged = judge_generations(kafka_broker.bootstrap_servers, played[strategy], strategy)
    print(judged.line(LIBRARY, strategy))
    assert judged.generations >= SCENARIOS * 6
    assert judged.divergent == 0


def test_a_sarama_sticky_generation_is_javas_or_no_verdict_for_go_map_order(
    kafka_broker: BrokerInfo, played: dict[str, list[str]]
) -> None:
    """Every ``sticky`` leader is identified as Java (Sarama's subscription is a Java client's
    before 3.5, an empty claim when it held nothing), and every generation is judged as
    Java's, not divergent,
    or has no verdict, whose error names Go's map order (``registry.UNMODELLED_REASONS``)."""
    verdicts: Counter[str] = Counter()
    for group in played["sticky"]:
        for record in group_records(kafka_broker.bootstrap_servers, group):
            implementation, own = tracker_verdict(record, leader_counts(record))
            assert implementation == "java"  # Sarama's look-alike
            assert own.divergent is not True  # type: ignore[attr-defined]
            if own.divergent is None:  # type: ignore[attr-defined]
                assert "Go's map iteration order" in own.error  # type: ignore[attr-defined]
                verdicts[f"leader as {implementation}: no verdict (Go's map order)"] += 1
            else:
                verdicts[f"leader as {implementation}: judged as Java's"] += 1
    print(f"{LIBRARY} sticky: {dict(verdicts)}")
    assert sum(verdicts.values()) >= SCENARIOS * 6


def test_every_classic_cause_agrees_with_the_broker(
    kafka_broker: BrokerInfo, kafka_broker_config: BrokerConfig, played: dict[str, list[str]]
) -> None:
    """Every rebalance of the played groups against the reason the group coordinator logged
    when it started it (``tests/broker_log.py``)."""
    assert_causes_agree(
        LIBRARY, kafka_broker.bootstrap_servers, kafka_broker_config.log_path, played
    )
