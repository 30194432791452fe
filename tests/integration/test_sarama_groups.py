"""Sarama groups on the real broker: the tracker never calls a healthy group divergent.

Real Sarama members (``tests/sarama``, built with ``go`` into ``.cache/sarama``; the test is
skipped without ``go``) play the scenarios of the kafka-python tier
(``test_kafka_python_sticky_groups.play``: joins of static and dynamic members, a member
paused past its session, a leave, a crash, a join) with each of Sarama's balance strategies;
``cooperative-sticky`` runs the cooperative protocol. The groups are configured for broker
3.6 (Sarama's ``Config.Version``: subscription version 2); ``cooperative-sticky`` plays once
more at Sarama's default, 2.8 (version 1), and ``sticky`` at 2.3 (version 0). Every
generation the broker recorded is given to the tracker, which must never call the group
divergent; Java's assignor of the same strategy is counted against the recorded assignment,
and how the tracker identified the leader, both printed. Sarama's ``sticky`` and
``cooperative-sticky`` (not modelled: their answers vary with Go's map order) are judged as
Java's where that matches, else left without a verdict that says why. Every rebalance's
cause is held against the broker's logged reason.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from streaming.kafka_local import BrokerConfig, BrokerInfo
from tests.golang import build
from tests.integration.java_groups import assert_causes_agree
from tests.integration.test_franz_go_groups import judge_generations, member_command
from tests.integration.test_kafka_python_sticky_groups import (
    SCENARIOS,
    TOPICS,
    Command,
    leader_counts,
    play_all,
)
from tests.integration.test_kafka_python_sticky_groups import topics as topics
from tests.integration.test_librdkafka_assignors import group_records, tracker_verdict

#: The client library the groups run, in the printed counts.
LIBRARY = "Sarama"

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(900)]

#: The played groups' labels -> (balance strategy, Sarama's ``Config.Version``).
PLAYED = {
    "range": ("range", "3.6.0"),
    "roundrobin": ("roundrobin", "3.6.0"),
    "sticky": ("sticky", "3.6.0"),
    "sticky-at-2.3": ("sticky", "2.3.0"),
    "cooperative-sticky": ("cooperative-sticky", "3.6.0"),
    "cooperative-sticky-at-2.8": ("cooperative-sticky", "2.8.0"),
}

#: The subscription version Sarama writes at each ``Config.Version`` played.
SUBSCRIPTION_VERSION = {"3.6.0": 2, "2.8.0": 1, "2.3.0": 0}

#: The sticky-family labels, and what the tracker identifies their leaders as: Sarama's
#: look-alikes (``registry.SHARED_SHAPE``; a ``sticky`` leader that held nothing claims
#: nothing, like franz-go's).
STICKY_FAMILY = {
    "sticky": ("java", "franz-go"),
    "sticky-at-2.3": ("java",),
    "cooperative-sticky": ("java",),
    "cooperative-sticky-at-2.8": ("java",),
}


def sarama_command(binary: Path) -> Command:
    """:func:`member_command` of a played label: its strategy at its ``Config.Version``."""
    base = member_command(binary)

    def command(
        bootstrap: str,
        group: str,
        label: str,
        name: str,
        topics: list[str],
        instance: str | None,
    ) -> list[str]:
        strategy, version = PLAYED[label]
        argv: list[str] = base(bootstrap, group, strategy, name, topics, instance)
        return [*argv, "-kafka-version", version]

    return command


@pytest.fixture(scope="module")
def played(kafka_broker: BrokerInfo, topics: dict[str, int]) -> dict[str, list[str]]:
    assert topics == TOPICS
    command = sarama_command(build("sarama", "sarama/member"))
    return play_all(kafka_broker.bootstrap_servers, tuple(PLAYED), SCENARIOS, command)


@pytest.mark.parametrize("label", PLAYED)
def test_sarama_groups_are_never_called_divergent(
    kafka_broker: BrokerInfo, played: dict[str, list[str]], label: str
) -> None:
    """No generation divergent; the leaders' subscriptions are at the version Sarama
    writes for its ``Config.Version`` (never 3)."""
    strategy, version = PLAYED[label]
    judged = judge_generations(kafka_broker.bootstrap_servers, played[label], strategy)
    print(judged.line(LIBRARY, label))
    print(
        f"{LIBRARY} {label}: {judged.generations} generations, {judged.judged} judged, "
        f"{judged.generations - judged.judged} no verdict, {judged.divergent} divergent"
    )
    assert judged.generations >= SCENARIOS * 6
    assert judged.divergent == 0
    assert {v for v, _data in judged.shapes} == {SUBSCRIPTION_VERSION[version]}


@pytest.mark.parametrize("label", STICKY_FAMILY)
def test_a_sarama_sticky_generation_is_javas_or_no_verdict_for_go_map_order(
    kafka_broker: BrokerInfo, played: dict[str, list[str]], label: str
) -> None:
    """Every leader of Sarama's ``sticky`` and ``cooperative-sticky`` is identified as one
    whose look-alike is Sarama, and every generation is judged as Java's, not divergent, or
    has no verdict, whose error names Go's map order (``registry.UNMODELLED_REASONS``)."""
    verdicts: Counter[str] = Counter()
    for group in played[label]:
        for record in group_records(kafka_broker.bootstrap_servers, group):
            implementation, own = tracker_verdict(record, leader_counts(record))
            assert implementation in STICKY_FAMILY[label]
            assert own.divergent is not True  # type: ignore[attr-defined]
            if own.divergent is None:  # type: ignore[attr-defined]
                assert "Go's map iteration order" in own.error  # type: ignore[attr-defined]
                verdicts[f"leader as {implementation}: no verdict (Go's map order)"] += 1
            else:
                assert own.implementation == "java"  # type: ignore[attr-defined]
                verdicts[f"leader as {implementation}: judged as Java's"] += 1
    print(f"{LIBRARY} {label}: {dict(verdicts)}")
    assert sum(verdicts.values()) >= SCENARIOS * 6


def test_every_classic_cause_agrees_with_the_broker(
    kafka_broker: BrokerInfo, kafka_broker_config: BrokerConfig, played: dict[str, list[str]]
) -> None:
    """Every rebalance of the played groups against the reason the group coordinator logged
    when it started it (``tests/broker_log.py``), counted per played label. The
    ``cooperative-sticky`` groups ran the cooperative protocol: a member that gave up
    partitions rejoined at once (the broker logged its follow-up)."""
    for label, groups in played.items():
        verdicts = assert_causes_agree(
            f"{LIBRARY} {label}",
            kafka_broker.bootstrap_servers,
            kafka_broker_config.log_path,
            {label: groups},
        )
        causes = Counter(v.cause for v in verdicts)
        print(f"{LIBRARY} {label}: causes {dict(causes)}")
        assert (causes["cooperative_followup"] > 0) is (PLAYED[label][0] == "cooperative-sticky")
