"""Real kafka-python ``sticky`` and ``cooperative-sticky`` groups, judged by the tracker.

Real kafka-python consumers (the simulator's members, ``streaming.simulate.member``: each its
own OS process, so each leader runs with its own random string hash seed, as in production)
form groups on the session's broker: members join one by one (static and dynamic, identical
and different subscriptions), one is stopped (``SIGSTOP``) past its session and resumes with
its stale claim of an older generation, one leaves, one crashes (``kill -9``), a new one
joins. Every generation the broker recorded (its GroupMetadata record in
``__consumer_offsets``) is then given to the tracker: the leader must be identified as
kafka-python and the verdict must be no divergence, judged against kafka-python's own
algorithm (:mod:`assign_core.assignors._kafka_python_sticky`); and the first hash order's
answer is counted against the recorded assignment (printed with the counts). A new leader
may not know the topics outside its own subscription yet: it assigns none of their
partitions, and the tracker tries that reading too.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import IO, Any

import pytest

from assign_core.assignors import get_assignor
from assign_core.model import GroupSpec, TopicPartition
from streaming.codec.model import GroupMetadata
from streaming.kafka_local import BrokerConfig, BrokerInfo
from streaming.tracking.expected import classic_specs, flatten
from tests.integration.java_groups import assert_causes_agree
from tests.integration.test_librdkafka_assignors import (
    ensure_topics,
    group_records,
    tracker_verdict,
)

admin_module = pytest.importorskip("confluent_kafka.admin")

#: The client library the groups run, in the printed counts.
LIBRARY = "kafka-python"

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(900)]

TOPICS = {"kp-Order": 7, "kp-Stock": 5, "kp-Big": 12}
SCENARIOS = 2  # per strategy, all played side by side
SESSION_MS = 4000


@pytest.fixture(scope="module")
def topics(kafka_broker: BrokerInfo) -> dict[str, int]:
    return ensure_topics(kafka_broker.bootstrap_servers, TOPICS)


@dataclass
class _Process:
    """One member process and the assignments it printed."""

    name: str
    proc: subprocess.Popen[str]
    lines: list[dict[str, Any]] = field(default_factory=list)

    def latest(self) -> dict[str, Any] | None:
        found = [x for x in self.lines if x.get("event") == "assignment"]
        return found[-1] if found else None


def _read(member: _Process, stream: IO[str]) -> None:
    for line in stream:
        try:
            member.lines.append(json.loads(line))
        except ValueError:
            continue


def kafka_python_member(
    bootstrap: str, group: str, strategy: str, name: str, topics: list[str], instance: str | None
) -> list[str]:
    """The command of one kafka-python member (the simulator's)."""
    argv = [
        sys.executable, "-m", "streaming.simulate.member",
        "--bootstrap-server", bootstrap, "--group", group, "--name", name,
        "--topics", ",".join(topics), "--assignor", strategy,
        "--session-timeout-ms", str(SESSION_MS), "--heartbeat-interval-ms", "500",
        "--commit-interval-ms", "60000",
    ]  # fmt: skip
    return argv + (["--instance-id", instance] if instance is not None else [])


Command = Callable[[str, str, str, str, list[str], "str | None"], list[str]]


class Group:
    """Member processes of one group, each printing its assignments as JSON lines."""

    def __init__(
        self, bootstrap: str, group: str, strategy: str, command: Command = kafka_python_member
    ) -> None:
        self.bootstrap, self.group, self.strategy = bootstrap, group, strategy
        self.command = command
        self.members: dict[str, _Process] = {}

    def join(self, name: str, topics: list[str], instance_id: str | None) -> None:
        argv = self.command(self.bootstrap, self.group, self.strategy, name, topics, instance_id)
        env = {**os.environ, "PYTHONHASHSEED": "random"}
        proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
        )
        member = _Process(name, proc)
        assert proc.stdout is not None
        threading.Thread(target=_read, args=(member, proc.stdout), daemon=True).start()
        self.members[name] = member

    def alive(self) -> list[_Process]:
        return [m for m in self.members.values() if m.proc.poll() is None]

    def settle(self, quiet_s: float = 2.5, timeout_s: float = 60.0) -> None:
        """Until every live member reports an assignment of one generation and nothing new
        comes for ``quiet_s``."""
        deadline = time.monotonic() + timeout_s
        last: object = None
        since = time.monotonic()
        while time.monotonic() < deadline:
            latest = [m.latest() for m in self.alive()]
            state = tuple((x or {}).get("generation") for x in latest)
            if state != last:
                last, since = state, time.monotonic()
            elif None not in state and len(set(state)) == 1 and time.monotonic() - since > quiet_s:
                return
            time.sleep(0.2)
        raise AssertionError(f"{self.group} did not settle: {last}")

    def close(self, name: str) -> None:
        member = self.members[name]
        member.proc.send_signal(signal.SIGTERM)
        member.proc.wait(30)

    def kill(self, name: str) -> None:
        member = self.members[name]
        member.proc.kill()
        member.proc.wait(30)

    def pause(self, name: str, seconds: float) -> None:
        member = self.members[name]
        member.proc.send_signal(signal.SIGSTOP)
        time.sleep(seconds)
        member.proc.send_signal(signal.SIGCONT)

    def stop_all(self) -> None:
        for m in self.members.values():
            if m.proc.poll() is None:
                m.proc.send_signal(signal.SIGCONT)
                m.proc.send_signal(signal.SIGTERM)
        for m in self.members.values():
            try:
                m.proc.wait(30)
            except subprocess.TimeoutExpired:
                m.proc.kill()
                m.proc.wait(10)


@contextlib.contextmanager
def running_group(
    bootstrap: str, group: str, strategy: str, command: Command = kafka_python_member
) -> Iterator[Group]:
    g = Group(bootstrap, group, strategy, command)
    try:
        yield g
    finally:
        g.stop_all()


def play(
    bootstrap: str, strategy: str, scenario: int, command: Command = kafka_python_member
) -> str:
    """One generated scenario (module docstring); returns the group id."""
    rnd = random.Random(f"kp-{strategy}-{scenario}")
    group = f"kp-{strategy}-{scenario}-{time.monotonic_ns()}"
    names = list(TOPICS)
    same = rnd.random() < 0.6

    def subscription() -> list[str]:
        if same:
            return names
        return rnd.sample(names, k=rnd.randint(1, len(names)))

    with running_group(bootstrap, group, strategy, command) as g:
        for name in ("A", "B", "C"):
            instance = f"{name.lower()}-static" if rnd.random() < 0.4 else None
            g.join(name, subscription(), instance)
            g.settle()
        g.pause(rnd.choice(["A", "B", "C"]), SESSION_MS / 1000 + 4)  # back with a stale claim
        g.settle()
        g.join("D", subscription(), None)
        g.settle()
        leaving, crashing = rnd.sample(["A", "B", "C"], k=2)
        g.close(leaving)
        g.settle()
        g.kill(crashing)
        time.sleep(SESSION_MS / 1000 + 1)
        g.settle()
        g.join("E", subscription(), None)
        g.settle()
    return group


def described(record: GroupMetadata, counts: dict[str, int], own: Any) -> str:
    """The record as the assignor sees it, the recorded and the expected assignment."""
    lines = [f"generation {record.generation} leader {record.leader} counts {counts}"]
    for m in record.members:
        sub = m.subscription
        owned = [str(tp) for tp in flatten(sub.owned_partitions)] if sub else None
        held = flatten(m.assignment.assigned_partitions) if m.assignment else ()
        lines.append(
            f"  {m.member_id} instance={m.group_instance_id} "
            f"topics={sub.topics if sub else None} v={sub.version if sub else None} "
            f"gen={sub.generation_id if sub else None} "
            f"user_data={sub.user_data.hex() if sub and sub.user_data else None} "
            f"owned={owned} assigned={[str(tp) for tp in held]} "
            f"expected={[str(tp) for tp in (own.assignment or {}).get(m.member_id, ())]}"
        )
    return "\n".join(lines)


def leader_counts(record: GroupMetadata) -> dict[str, int]:
    """The partition counts the leader knew, as the tracker reads them from the record: the
    highest partition assigned or owned + 1 of each subscribed topic (a kafka-python leader
    that had no metadata for a topic yet left it out, and assigned nothing of it)."""
    highest: dict[str, int] = {}
    for m in record.members:
        held = flatten(m.assignment.assigned_partitions) if m.assignment else ()
        owned = flatten(m.subscription.owned_partitions) if m.subscription else ()
        for tp in (*held, *owned):
            highest[tp.topic] = max(highest.get(tp.topic, 0), tp.partition + 1)
    return highest


@dataclass
class _Tally:
    generations: int = 0
    first_order: int = 0  # the first hash order's answer is the recorded one
    unknown_topics: int = 0  # the same, when the leader knew only the topics it assigned
    other_order: int = 0  # another order's answer is


def _first_order(strategy: str, spec: GroupSpec) -> dict[str, tuple[TopicPartition, ...]]:
    answer = get_assignor(strategy, "kafka-python").assign(spec).assignment
    return {m: tuple(tps) for m, tps in answer.items()}


STRATEGIES = ("sticky", "cooperative-sticky")


def play_all(
    bootstrap: str,
    strategies: tuple[str, ...],
    scenarios: int = SCENARIOS,
    command: Command = kafka_python_member,
) -> dict[str, list[str]]:
    """Every strategy's first ``scenarios`` played side by side (the groups are independent
    and a scenario mostly waits for its members): strategy -> group ids."""
    plays = [(strategy, scenario) for strategy in strategies for scenario in range(scenarios)]
    with ThreadPoolExecutor(max_workers=len(plays)) as pool:
        groups = list(pool.map(lambda p: play(bootstrap, p[0], p[1], command), plays))
    out: dict[str, list[str]] = {s: [] for s in strategies}
    for (strategy, _scenario), group in zip(plays, groups, strict=True):
        out[strategy].append(group)
    return out


@pytest.fixture(scope="module")
def played(kafka_broker: BrokerInfo, topics: dict[str, int]) -> dict[str, list[str]]:
    return play_all(kafka_broker.bootstrap_servers, STRATEGIES)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_real_kafka_python_groups_are_judged_without_divergence(
    kafka_broker: BrokerInfo, played: dict[str, list[str]], strategy: str
) -> None:
    tally = _Tally()
    for group in played[strategy]:
        records = group_records(kafka_broker.bootstrap_servers, group)
        assert len(records) >= 6, group
        for record in records:
            assert record.protocol == strategy
            counts = leader_counts(record)
            implementation, own = tracker_verdict(record, counts)
            where = (group, record.generation)
            if own.divergent is not False:  # type: ignore[attr-defined]
                print(described(record, counts, own))
            assert implementation == "kafka-python", where
            assert own.error is None and own.divergent is False, (where, own.error)  # type: ignore[attr-defined]
            assert own.implementation == "kafka-python", where  # type: ignore[attr-defined]
            own_spec, _ = classic_specs(
                record,
                topics=counts,
                racks={},
                topic_ids={},
                previous={},
                previous_generation=None,
                implementation="kafka-python",
            )
            recorded = {
                m.member_id: flatten(m.assignment.assigned_partitions if m.assignment else ())
                for m in record.members
            }
            assigned = {tp.topic for tps in recorded.values() for tp in tps}
            known = replace(
                own_spec, topics={t: n for t, n in own_spec.topics.items() if t in assigned}
            )
            tally.generations += 1
            if _first_order(strategy, own_spec) == recorded:
                tally.first_order += 1
            elif _first_order(strategy, known) == recorded:
                tally.unknown_topics += 1
            else:
                tally.other_order += 1
    print(
        f"kafka-python {strategy} on the broker: {tally.generations} generations judged, none "
        f"divergent; the first hash order's answer identical in {tally.first_order}, in "
        f"{tally.unknown_topics} more when the leader knew only the topics it assigned, "
        f"another order's in {tally.other_order}"
    )
    assert tally.generations >= SCENARIOS * 6


def test_every_classic_cause_agrees_with_the_broker(
    kafka_broker: BrokerInfo, kafka_broker_config: BrokerConfig, played: dict[str, list[str]]
) -> None:
    """Every rebalance of the played groups against the reason the group coordinator logged
    when it started it (``tests/broker_log.py``)."""
    assert_causes_agree(
        LIBRARY, kafka_broker.bootstrap_servers, kafka_broker_config.log_path, played
    )
