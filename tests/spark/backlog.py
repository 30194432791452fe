"""A recorded backlog for the end-to-end tiers: the source documents' scenarios, played by real
consumer processes on the session broker while the real collector publishes membership
events, plus one garbage record on the membership topic.

The job tests then read it all back from Kafka (``__consumer_offsets`` and the membership
topic) and compare what the job wrote with what the clients themselves reported
(:class:`streaming.simulate.scenarios.ScenarioResult`): an independent account of every
generation, member id and assignment.

Plays (group ``<prefix>-<n>-<scenario>``):

* ``join-one-by-one`` (range, kafka-python): three joins, one rebalance each;
* ``crash`` with range and roundrobin (kafka-python) and sticky (Java ``KafkaConsumer``):
  ``kill -9`` of C3, removed by the session timeout;
* ``cooperative`` (cooperative-sticky, Java members: kafka-python's cooperative-sticky sends
  no generation and assigns differently from Java on joins);
* ``graceful-leave`` (LeaveGroup) and ``partition-increase`` (range, kafka-python);
* and ``<prefix>-steady``: two members that stay until the session ends (live series).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from streaming.simulate.runner import run_scenario
from streaming.simulate.scenarios import MemberKind, ScenarioResult, get_scenario

REPO = Path(__file__).resolve().parents[2]
GARBAGE = b"\x00not a membership event"


@dataclass(frozen=True)
class Play:
    scenario: str
    assignor: str
    kind: MemberKind = "python"

    @property
    def label(self) -> str:
        return f"{self.scenario}/{self.assignor}/{self.kind}"


PLAYS: tuple[Play, ...] = (
    Play("join-one-by-one", "range"),
    Play("crash", "range"),
    Play("crash", "roundrobin"),
    Play("crash", "sticky", "java"),
    Play("cooperative", "cooperative-sticky", "java"),
    Play("graceful-leave", "range"),
    Play("partition-increase", "range"),
)


class SteadyGroup:
    """Two kafka-python members that stay in their group until :meth:`close` (the end of the
    test session), so the job sees a live group: members holding partitions, lag. They
    commit once when both hold their partitions, then only poll and heartbeat (no more
    records in ``__consumer_offsets``: the job can catch up and go idle)."""

    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
        from kafka.admin import NewTopic

        self.group, self.topic = group, topic
        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        try:
            admin.create_topics([NewTopic(topic, num_partitions=4, replication_factor=1)])
        finally:
            admin.close()
        producer = KafkaProducer(bootstrap_servers=bootstrap)
        for i in range(40):
            producer.send(topic, value=b"x", partition=i % 4)
        producer.flush()
        producer.close()
        self.members = [
            KafkaConsumer(
                bootstrap_servers=bootstrap,
                group_id=group,
                client_id=f"steady-{n}",
                enable_auto_commit=False,
                auto_offset_reset="earliest",
                max_poll_records=5,
                max_poll_interval_ms=3_600_000,
            )
            for n in (1, 2)
        ]
        for member in self.members:
            member.subscribe([topic])
        self._stop = threading.Event()
        self._committed = [threading.Event() for _ in self.members]
        self._errors: list[BaseException] = []
        # One thread per member: a member polled from the thread of another can hold the
        # group's join phase open (eager rebalance) while the other waits its turn.
        self._threads = [
            threading.Thread(target=self._run, args=(n,), name=f"steady-{n}", daemon=True)
            for n in range(len(self.members))
        ]
        for thread in self._threads:
            thread.start()
        deadline = time.monotonic() + 90
        for event in self._committed:
            if not event.wait(max(0.0, deadline - time.monotonic())):
                self.close()
                raise AssertionError(f"the steady group did not settle: {self._errors}")

    def _run(self, n: int) -> None:
        from kafka.errors import CommitFailedError, RebalanceInProgressError
        from kafka.structs import OffsetAndMetadata

        member = self.members[n]
        try:
            while not self._stop.is_set():
                member.poll(timeout_ms=200)
                # 2 of the 4 partitions: the rebalance with both members is done. Commit
                # each partition's position (a plain commit() commits only the partitions
                # consumed from, none if no fetch has returned yet)
                if not self._committed[n].is_set() and len(member.assignment()) == 2:
                    try:
                        member.commit(
                            {
                                tp: OffsetAndMetadata(member.position(tp), "", -1)
                                for tp in member.assignment()
                            }
                        )
                    except (CommitFailedError, RebalanceInProgressError):
                        continue
                    self._committed[n].set()
        except BaseException as exc:  # reported by __init__
            self._errors.append(exc)

    def close(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=30)
        for member in self.members:
            member.close()


@dataclass(frozen=True)
class Backlog:
    """What was played: the results by play, the membership topic, the group-id prefix, and
    the steady group that stays alive while the tests run."""

    bootstrap_servers: str
    membership_topic: str
    prefix: str
    results: Mapping[Play, ScenarioResult]
    steady: SteadyGroup | None = None

    @property
    def groups(self) -> list[str]:
        return sorted(r.group_id for r in self.results.values())

    def result(self, scenario: str, assignor: str) -> ScenarioResult:
        for play, result in self.results.items():
            if play.scenario == scenario and play.assignor == assignor:
                return result
        raise KeyError(f"{scenario}/{assignor} was not played")


def _play(play: Play, *, bootstrap: str, prefix: str, log_dir: Path) -> ScenarioResult:
    scenario = get_scenario(play.scenario)
    if play.assignor != scenario.assignor:
        scenario = scenario.with_assignor(play.assignor)
    if play.kind != scenario.members[0].kind:
        members = tuple(replace(m, kind=play.kind) for m in scenario.members)
        scenario = replace(scenario, members=members)
    result = run_scenario(
        scenario,
        bootstrap_servers=bootstrap,
        group_prefix=prefix,
        log_dir=log_dir,
        keep_topics=True,
        timeout_s=120,
    )
    failed = [f"{c.description}: {c.detail}" for c in result.checks if not c.ok]
    if result.error is not None or failed:
        raise AssertionError(f"{play.label} did not play as scripted: {result.error} {failed}")
    return result


@contextlib.contextmanager
def collector(bootstrap: str, topic: str, group_filter: str, log: Path) -> Iterator[None]:
    """The real collector (``rebalance-monitor collect``) as a process, one snapshot a second,
    each poll's unchanged groups named in a ``poll`` event."""
    command = [
        str(Path(sys.executable).with_name("rebalance-monitor")),
        "collect",
        "--bootstrap-server", bootstrap,
        "--topic", topic,
        "--interval", "1",
        "--poll-event-interval", "1",  # the tests' short sessions: every poll named
        "--group-filter", group_filter,
    ]  # fmt: skip
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, cwd=REPO, start_new_session=True
        )
    try:
        time.sleep(2)
        if proc.poll() is not None:
            raise AssertionError(f"the collector exited: {log.read_text(errors='replace')}")
        yield
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def record(bootstrap: str, log_dir: Path, plays: tuple[Play, ...] = PLAYS) -> Backlog:
    """Create the membership topic, play ``plays`` under the collector, add the garbage."""
    from kafka import KafkaAdminClient, KafkaProducer
    from kafka.admin import NewTopic

    prefix = f"e2e-{secrets.token_hex(3)}"
    topic = f"{prefix}.membership"
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)])
    finally:
        admin.close()
    results: dict[Play, ScenarioResult] = {}
    with collector(bootstrap, topic, rf"{prefix}-.*", log_dir / "collector.log"):
        steady = SteadyGroup(bootstrap, f"{prefix}-steady", f"{prefix}-steady-events")
        for n, play in enumerate(plays):
            started = time.monotonic()
            results[play] = _play(
                play, bootstrap=bootstrap, prefix=f"{prefix}-{n}", log_dir=log_dir
            )
            print(f"played {play.label} in {time.monotonic() - started:.1f} s", flush=True)
        time.sleep(2)  # a last snapshot of the final (empty) groups
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    try:
        producer.send(topic, key=b"local", value=GARBAGE, partition=0)
        producer.flush()
    finally:
        producer.close()
    return Backlog(bootstrap, topic, prefix, results, steady)
