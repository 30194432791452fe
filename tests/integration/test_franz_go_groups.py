"""franz-go groups on the real broker, measured against the modelled assignors.

Real franz-go members (``tests/franzgo``, built with ``go`` into ``.cache/franzgo``; the test
is skipped without ``go``) play the scenarios of the kafka-python tier
(``test_kafka_python_sticky_groups.play``: joins of static and dynamic members, a member
paused past its session, a leave, a crash, a join) with each of franz-go's balancers. Every
generation the broker recorded is compared with Java's assignor of the same strategy on the
record's input (the same sets per member), and given to the tracker, which must never call
a group divergent. ``range`` and ``roundrobin`` must match Java's. ``sticky`` and
``cooperative-sticky`` are franz-go's own balancer (``assign_core.assignors.franz_go_sticky``):
every generation must be judged, none divergent. Its eager ``sticky`` leader is identified as
franz-go and judged so; its ``cooperative-sticky`` subscription looks like librdkafka's, so
it is judged as librdkafka's where that answer matches too, else as franz-go's. The counts
are printed.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from assign_core.assignors import get_assignor
from assign_core.errors import AssignmentError
from streaming.kafka_local import BrokerConfig, BrokerInfo
from streaming.tracking.expected import classic_specs, flatten
from tests.golang import build
from tests.integration.java_groups import assert_causes_agree
from tests.integration.test_kafka_python_sticky_groups import (
    SESSION_MS,
    TOPICS,
    leader_counts,
    play_all,
)
from tests.integration.test_kafka_python_sticky_groups import topics as topics
from tests.integration.test_librdkafka_assignors import group_records, tracker_verdict

#: The client library the groups run, in the printed counts.
LIBRARY = "franz-go"

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(900)]

SCENARIOS = 2  # per strategy, all played side by side


@pytest.fixture(scope="module")
def franz_go_member() -> Path:
    return build("franzgo", "franzgo/member")


def member_command(binary: Path):  # type: ignore[no-untyped-def]
    """The command of one member of a Go member program (``tests/franzgo``,
    ``tests/sarama``: the same flags), for :func:`play_all`."""

    def command(
        bootstrap: str,
        group: str,
        strategy: str,
        name: str,
        topics: list[str],
        instance: str | None,
    ) -> list[str]:
        argv = [
            str(binary), "-bootstrap-server", bootstrap, "-group", group, "-name", name,
            "-topics", ",".join(topics), "-balancer", strategy,
            "-session-timeout", f"{SESSION_MS}ms",
        ]  # fmt: skip
        return argv + (["-instance-id", instance] if instance is not None else [])

    return command


BALANCERS = ("range", "roundrobin", "sticky", "cooperative-sticky")


@pytest.fixture(scope="module")
def played(
    kafka_broker: BrokerInfo, topics: dict[str, int], franz_go_member: Path
) -> dict[str, list[str]]:
    assert topics == TOPICS
    return play_all(
        kafka_broker.bootstrap_servers, BALANCERS, SCENARIOS, member_command(franz_go_member)
    )


@dataclass
class Judged:
    """A tier's generations of one strategy, as the tracker judged them."""

    generations: int = 0
    like_java: int = 0
    """Java's assignor of the strategy gives the recorded assignment."""
    judged: int = 0
    divergent: int = 0
    judged_as: Counter[str | None] = field(default_factory=Counter)
    """The implementation each generation was judged by (None: no verdict)."""
    unjudged: Counter[str] = field(default_factory=Counter)
    """Why a generation got no verdict (the error's first words)."""
    identified: Counter[str | None] = field(default_factory=Counter)
    shapes: set[tuple[int, str]] = field(default_factory=set)
    """The leaders' subscriptions: (version, user data's first 8 bytes)."""

    def line(self, library: str, strategy: str) -> str:
        return (
            f"{library} {strategy}: {self.generations} generations; Java's answer identical in "
            f"{self.like_java}; identified as {dict(self.identified)}; the tracker judged "
            f"{self.judged} (as {dict(self.judged_as)}), divergent {self.divergent}; no "
            f"verdict: {dict(self.unjudged)}; leader subscriptions (version, user data) "
            f"{sorted(self.shapes)}"
        )


def judge_generations(bootstrap: str, groups: list[str], strategy: str) -> Judged:
    """Every generation the broker recorded of ``groups``, given to the tracker's verdict
    and to Java's assignor of ``strategy`` on the record's input."""
    out = Judged()
    for group in groups:
        for record in group_records(bootstrap, group):
            leader = next(m for m in record.members if m.member_id == record.leader)
            sub = leader.subscription
            assert sub is not None
            user_data = "null" if sub.user_data is None else sub.user_data.hex()[:16]
            out.shapes.add((sub.version, user_data))
            counts = leader_counts(record)
            implementation, own = tracker_verdict(record, counts)
            out.identified[implementation] += 1
            own_spec, _ = classic_specs(
                record, topics=counts, racks={}, topic_ids={}, previous={},
                previous_generation=None,
            )  # fmt: skip
            recorded = {
                m.member_id: set(flatten(m.assignment.assigned_partitions if m.assignment else ()))
                for m in record.members
            }
            out.generations += 1
            try:
                java = get_assignor(strategy).assign(own_spec)
            except AssignmentError:
                java = None
            if java is not None and all(set(java.assignment[m]) == recorded[m] for m in recorded):
                out.like_java += 1
            out.judged += own.divergent is not None  # type: ignore[attr-defined]
            out.divergent += own.divergent is True  # type: ignore[attr-defined]
            if own.divergent is not None:  # type: ignore[attr-defined]
                out.judged_as[own.implementation] += 1  # type: ignore[attr-defined]
            else:
                out.unjudged[" ".join(str(own.error).split()[:6])] += 1  # type: ignore[attr-defined]
    return out


@pytest.mark.parametrize("strategy", BALANCERS)
def test_franz_go_groups_against_the_models(
    kafka_broker: BrokerInfo, played: dict[str, list[str]], strategy: str
) -> None:
    judged = judge_generations(kafka_broker.bootstrap_servers, played[strategy], strategy)
    print(judged.line(LIBRARY, strategy))
    assert judged.generations >= SCENARIOS * 6 and judged.divergent == 0
    assert judged.judged == judged.generations and not judged.unjudged
    if strategy in ("range", "roundrobin"):
        assert judged.like_java == judged.generations
    elif strategy == "sticky":
        assert judged.judged_as == {"franz-go": judged.generations}
    else:
        assert set(judged.judged_as) <= {"franz-go", "librdkafka"}
        assert judged.judged_as["franz-go"] > 0


def test_every_classic_cause_agrees_with_the_broker(
    kafka_broker: BrokerInfo, kafka_broker_config: BrokerConfig, played: dict[str, list[str]]
) -> None:
    """Every rebalance of the played groups against the reason the group coordinator logged
    when it started it (``tests/broker_log.py``)."""
    assert_causes_agree(
        LIBRARY, kafka_broker.bootstrap_servers, kafka_broker_config.log_path, played
    )
