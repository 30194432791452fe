"""The scenarios of ``rebalance-monitor simulate``: declarative scripts and their results.

Pure: no Kafka client and no processes here (``runner.py`` plays the scripts). A
:class:`Scenario` declares its members (:class:`MemberSpec`) and a list of steps:

=====================  ======================================================================
step                   what the runner does
=====================  ======================================================================
``CreateTopics``       admin CreateTopics (and waits until the metadata lists them)
``SetGroupConfig``     admin IncrementalAlterConfigs on the group (KIP-848 group settings)
``StartMember``        starts the member's own OS process (Python or Java consumer)
``KillMember``         ``kill -9``: a crash, no LeaveGroup; the coordinator waits for the
                       session timeout
``CloseMember``        SIGTERM: ``consumer.close()`` (LeaveGroup for a dynamic member, nothing
                       for a static one)
``AddPartitions``      admin CreatePartitions
``WaitStable``         waits until every running member reports the same generation and the
                       reported assignments cover the subscribed partitions exactly once
``WaitGroupEmpty``     with every member stopped, waits until the coordinator says ``Empty``
=====================  ======================================================================

Topic names in a scenario are logical (``Order``); the runner prefixes them per run. A
pattern subscription is a regular expression over logical names that must match a whole name.

A run ends in a :class:`ScenarioResult`: the steps with wall-clock timestamps, the group as
the members reported it at every ``WaitStable`` (a :class:`GroupSnapshot`: member id,
generation and partitions of each member), every JSON line the members printed, and the
scenario's :class:`Check` results. Checks are plain functions of the result; some apply only
to the assignor the result was produced with (``--assignor`` can switch the Python members of
some scenarios).

Errors (the hierarchy of the whole package; the runner raises the last three)::

    SimulationError              root
    ├── ScenarioDefinitionError  a scenario script is inconsistent (raised on construction)
    ├── SetupError               no broker, no java/javac/jars, a topic name taken
    ├── MemberFailedError        a member process exited without being asked to
    └── StepTimeoutError         a step did not finish in time
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Literal

from streaming.errors import EXIT_FAILED, EXIT_USAGE, ConfigError, RebalanceMonitorError

__all__ = [
    "CLASSIC_ASSIGNORS",
    "SCENARIOS",
    "SERVER_ASSIGNORS",
    "AddPartitions",
    "Check",
    "CheckResult",
    "CloseMember",
    "CreateTopics",
    "GroupSnapshot",
    "KillMember",
    "MemberEvent",
    "MemberFailedError",
    "MemberSpec",
    "MemberView",
    "Pause",
    "Scenario",
    "ScenarioDefinitionError",
    "ScenarioResult",
    "SetGroupConfig",
    "SetupError",
    "SimulationError",
    "StartMember",
    "Step",
    "StepResult",
    "StepTimeoutError",
    "WaitGroupEmpty",
    "WaitStable",
    "describe_scenarios",
    "evaluate_checks",
    "get_scenario",
    "tracker_steps",
]

PartitionKey = tuple[str, int]
"""(logical topic, partition)."""

Assignment = dict[str, list[int]]
"""Logical topic -> sorted partitions, as shown and as tests compare them."""

MemberKind = Literal["python", "java"]
GroupProtocol = Literal["classic", "consumer"]

#: Client-side assignors (classic protocol), by Kafka protocol name.
CLASSIC_ASSIGNORS = ("range", "roundrobin", "sticky", "cooperative-sticky")
#: Server-side assignors of a KIP-848 (``group.protocol=consumer``) group.
SERVER_ASSIGNORS = ("uniform", "range")

_NAME = re.compile(r"[A-Za-z0-9._-]+")


class SimulationError(RebalanceMonitorError):
    """Root of the simulator's errors; the message is meant for a person."""

    exit_status = EXIT_FAILED


class ScenarioDefinitionError(SimulationError, ConfigError):
    """A scenario script is inconsistent; the message names the scenario and the step."""

    exit_status = EXIT_USAGE


class SetupError(SimulationError):
    """Something the run needs is missing: the broker, java/javac, the client jars, or a
    topic name is taken with another partition count."""


class MemberFailedError(SimulationError):
    """A member process exited without being asked to (the message ends with its log)."""


class StepTimeoutError(SimulationError):
    """A step did not finish in time; the message says what was still missing."""


# --------------------------------------------------------------------------- members


@dataclass(frozen=True, kw_only=True)
class MemberSpec:
    """One member of a scenario. ``name`` is also its ``client.id``, so classic member ids
    (``<client.id>-<uuid>``) sort like the names: range and roundrobin order members by id."""

    name: str
    topics: tuple[str, ...] = ()
    pattern: str | None = None
    kind: MemberKind = "python"
    group_protocol: GroupProtocol = "classic"
    assignor: str = "range"
    instance_id: str | None = None
    session_timeout_ms: int = 2_000

    def __post_init__(self) -> None:
        where = f"member {self.name!r}"
        if not _NAME.fullmatch(self.name):
            raise ScenarioDefinitionError(f"{where}: name must match {_NAME.pattern}")
        if bool(self.topics) == (self.pattern is not None):
            raise ScenarioDefinitionError(f"{where}: give topics or a pattern, not both")
        if self.pattern is not None:
            try:
                re.compile(self.pattern)
            except re.error as exc:
                raise ScenarioDefinitionError(f"{where}: bad pattern: {exc}") from None
        if self.kind == "python" and self.group_protocol != "classic":
            raise ScenarioDefinitionError(
                f"{where}: kafka-python has no KIP-848 consumer protocol; use kind='java'"
            )
        allowed = CLASSIC_ASSIGNORS if self.group_protocol == "classic" else SERVER_ASSIGNORS
        if self.assignor not in allowed:
            raise ScenarioDefinitionError(
                f"{where}: assignor {self.assignor!r} is not one of {', '.join(allowed)} "
                f"({self.group_protocol} protocol)"
            )
        if self.instance_id is not None and not _NAME.fullmatch(self.instance_id):
            raise ScenarioDefinitionError(f"{where}: instance_id must match {_NAME.pattern}")
        if self.session_timeout_ms < 1_000:
            raise ScenarioDefinitionError(f"{where}: session_timeout_ms must be >= 1000")

    @property
    def heartbeat_interval_ms(self) -> int:
        """What the member runners use: a quarter of the session, at most one second."""
        return max(100, min(1_000, self.session_timeout_ms // 4))

    def subscribes(self, topic: str) -> bool:
        if self.pattern is not None:
            return re.fullmatch(self.pattern, topic) is not None
        return topic in self.topics

    def describe(self) -> str:
        what = "/" + self.pattern + "/" if self.pattern else "+".join(self.topics)
        parts = [self.kind, f"{self.group_protocol} protocol", f"assignor {self.assignor}", what]
        if self.instance_id:
            parts.append(f"static, group.instance.id={self.instance_id}")
        if self.group_protocol == "classic":
            parts.append(f"session.timeout.ms={self.session_timeout_ms}")
        return f"{self.name} ({', '.join(parts)})"


# --------------------------------------------------------------------------- steps


@dataclass(frozen=True)
class CreateTopics:
    topics: tuple[tuple[str, int], ...]
    kind: ClassVar[str] = "create-topics"

    def describe(self, scenario: Scenario) -> str:
        listed = ", ".join(f"{t} ({n} partition{'s' if n != 1 else ''})" for t, n in self.topics)
        return f"create topic{'s' if len(self.topics) != 1 else ''} {listed}"


@dataclass(frozen=True)
class SetGroupConfig:
    configs: tuple[tuple[str, str], ...]
    kind: ClassVar[str] = "set-group-config"

    def describe(self, scenario: Scenario) -> str:
        return "set group config " + ", ".join(f"{k}={v}" for k, v in self.configs)


@dataclass(frozen=True)
class StartMember:
    name: str
    kind: ClassVar[str] = "start"

    def describe(self, scenario: Scenario) -> str:
        return f"start {scenario.member(self.name).describe()}"


@dataclass(frozen=True)
class KillMember:
    name: str
    kind: ClassVar[str] = "kill"

    def describe(self, scenario: Scenario) -> str:
        return (
            f"kill -9 {self.name} (a crash: no LeaveGroup, the coordinator notices after "
            f"session.timeout.ms={scenario.member(self.name).session_timeout_ms})"
        )


@dataclass(frozen=True)
class CloseMember:
    name: str
    kind: ClassVar[str] = "close"

    def describe(self, scenario: Scenario) -> str:
        spec = scenario.member(self.name)
        if spec.instance_id is not None:
            how = "a static member sends no LeaveGroup"
        elif spec.group_protocol == "consumer":
            how = "leave heartbeat, member epoch -1"
        else:
            how = "LeaveGroup"
        return f"close {self.name} cleanly (consumer.close(): {how})"


@dataclass(frozen=True)
class AddPartitions:
    topic: str
    total: int
    kind: ClassVar[str] = "add-partitions"

    def describe(self, scenario: Scenario) -> str:
        return f"add partitions to {self.topic}: {self.total} in total (CreatePartitions)"


@dataclass(frozen=True)
class Pause:
    """Let the members run (poll and commit) for a while, e.g. before a crash, so that the
    group has the commit history a real one would."""

    seconds: float
    why: str = ""
    kind: ClassVar[str] = "pause"

    def describe(self, scenario: Scenario) -> str:
        return f"let the members run {self.seconds:g} s" + (f" ({self.why})" if self.why else "")


@dataclass(frozen=True)
class WaitStable:
    label: str
    timeout_s: float = 30.0
    kind: ClassVar[str] = "wait-stable"

    def describe(self, scenario: Scenario) -> str:
        return f"wait for a stable group ({self.label})"


@dataclass(frozen=True)
class WaitGroupEmpty:
    """Every member is stopped: wait until the coordinator reports the group ``Empty`` (a
    static member that closed stays a member until its session timeout runs out)."""

    label: str
    timeout_s: float = 60.0
    kind: ClassVar[str] = "wait-empty"

    def describe(self, scenario: Scenario) -> str:
        return f"wait until the coordinator reports the group empty ({self.label})"


Step = (
    CreateTopics
    | SetGroupConfig
    | StartMember
    | KillMember
    | CloseMember
    | AddPartitions
    | Pause
    | WaitStable
    | WaitGroupEmpty
)


# --------------------------------------------------------------------------- results


def _assignment(partitions: Iterable[PartitionKey]) -> Assignment:
    out: Assignment = {}
    for topic, partition in sorted(partitions):
        out.setdefault(topic, []).append(partition)
    return out


@dataclass(frozen=True, kw_only=True)
class MemberView:
    """What one member last reported: its member id, generation (KIP-848: member epoch) and
    partitions."""

    name: str
    member_id: str
    generation: int
    partitions: tuple[PartitionKey, ...]
    reported_ts_ms: int = 0

    @property
    def assignment(self) -> Assignment:
        return _assignment(self.partitions)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "member_id": self.member_id,
            "generation": self.generation,
            "assignment": self.assignment,
            "reported_ts_ms": self.reported_ts_ms,
        }


@dataclass(frozen=True, kw_only=True)
class GroupSnapshot:
    """The group at a stable point, as its running members reported it (name order).

    ``broker_members`` is the coordinator's own view (DescribeGroups client ids, sorted) for a
    classic group, ``None`` when not asked (KIP-848 groups) or not answered.
    """

    generation: int
    members: tuple[MemberView, ...]
    broker_members: tuple[str, ...] | None = None

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(m.name for m in self.members)

    @property
    def reached_ts_ms(self) -> int:
        """When the group got here: the last of the members' reports."""
        return max(m.reported_ts_ms for m in self.members)

    def member(self, name: str) -> MemberView:
        for m in self.members:
            if m.name == name:
                return m
        raise KeyError(f"{name} is not in the group at this point (members: {self.names})")

    @property
    def assignment(self) -> dict[str, Assignment]:
        """Member name -> its assignment."""
        return {m.name: m.assignment for m in self.members}

    def holders(self) -> dict[PartitionKey, list[str]]:
        out: dict[PartitionKey, list[str]] = {}
        for m in self.members:
            for tp in m.partitions:
                out.setdefault(tp, []).append(m.name)
        return out

    def counts(self) -> dict[str, int]:
        return {m.name: len(m.partitions) for m in self.members}

    def to_json(self) -> dict[str, Any]:
        return {
            "generation": self.generation,
            "reached_ts_ms": self.reached_ts_ms,
            "members": [m.to_json() for m in self.members],
            "broker_members": list(self.broker_members) if self.broker_members else None,
        }


@dataclass(frozen=True, kw_only=True)
class MemberEvent:
    """One JSON line a member printed (see ``member.py``), topics made logical."""

    name: str
    event: str
    ts_ms: int
    pid: int
    member_id: str | None = None
    generation: int | None = None
    partitions: tuple[PartitionKey, ...] = ()
    message: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "event": self.event, "ts_ms": self.ts_ms}
        out["pid"] = self.pid
        if self.member_id is not None:
            out["member_id"] = self.member_id
        if self.generation is not None:
            out["generation"] = self.generation
        if self.partitions or self.event in ("assignment", "revoked", "assigned", "lost"):
            out["assignment"] = _assignment(self.partitions)
        if self.message is not None:
            out["message"] = self.message
        return out


@dataclass(frozen=True, kw_only=True)
class StepResult:
    """One step as it ran; timestamps are wall-clock milliseconds."""

    index: int
    kind: str
    description: str
    started_ts_ms: int
    ended_ts_ms: int
    label: str | None = None
    stable: GroupSnapshot | None = None
    detail: str = ""

    @property
    def elapsed_s(self) -> float:
        return (self.ended_ts_ms - self.started_ts_ms) / 1000

    def to_json(self, scenario_start_ts_ms: int | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "index": self.index,
            "kind": self.kind,
            "description": self.description,
            "started_ts_ms": self.started_ts_ms,
            "ended_ts_ms": self.ended_ts_ms,
            "elapsed_s": round(self.elapsed_s, 3),
        }
        if scenario_start_ts_ms is not None:
            out["at_s"] = round((self.started_ts_ms - scenario_start_ts_ms) / 1000, 3)
        if self.label is not None:
            out["label"] = self.label
        if self.stable is not None:
            out["stable"] = self.stable.to_json()
        if self.detail:
            out["detail"] = self.detail
        return out


@dataclass(frozen=True, kw_only=True)
class CheckResult:
    description: str
    ok: bool
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"description": self.description, "ok": self.ok, "detail": self.detail}


@dataclass(frozen=True, kw_only=True)
class ScenarioResult:
    """Everything one run of a scenario produced; ``ok`` when it finished and every check
    passed. ``topics`` maps logical to real topic names, ``partitions`` logical names to
    their final partition counts."""

    scenario: str
    group_id: str
    bootstrap_servers: str
    assignor: str
    group_protocol: str
    topics: Mapping[str, str]
    partitions: Mapping[str, int]
    started_ts_ms: int
    duration_s: float
    steps: tuple[StepResult, ...]
    events: tuple[MemberEvent, ...]
    committed_partitions: int | None = None
    checks: tuple[CheckResult, ...] = ()
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and all(c.ok for c in self.checks)

    @property
    def final(self) -> GroupSnapshot:
        """The group at the last stable point (a scenario ends with ``WaitStable``)."""
        for step in reversed(self.steps):
            if step.stable is not None:
                return step.stable
        raise LookupError(f"{self.scenario}: no stable point was reached")

    def step(self, label: str) -> StepResult:
        for step in self.steps:
            if step.label == label:
                return step
        raise KeyError(f"{self.scenario}: no step labelled {label!r}")

    def stable(self, label: str) -> GroupSnapshot:
        snapshot = self.step(label).stable
        if snapshot is None:
            raise KeyError(f"{self.scenario}: step {label!r} has no stable group")
        return snapshot

    def seconds_to_stable(self, label: str, *, steps_back: int = 1) -> float:
        """From the start of the step ``steps_back`` before ``label`` until the group at
        ``label`` was reached (its last member report)."""
        index = self.step(label).index - steps_back
        start = next(s for s in self.steps if s.index == index)
        return (self.stable(label).reached_ts_ms - start.started_ts_ms) / 1000

    def events_of(
        self,
        name: str,
        event: str | None = None,
        *,
        since_ts_ms: int | None = None,
        until_ts_ms: int | None = None,
    ) -> list[MemberEvent]:
        return [
            e
            for e in self.events
            if e.name == name
            and (event is None or e.event == event)
            and (since_ts_ms is None or e.ts_ms >= since_ts_ms)
            and (until_ts_ms is None or e.ts_ms <= until_ts_ms)
        ]

    def to_json(self) -> dict[str, Any]:
        final: GroupSnapshot | None
        try:
            final = self.final
        except LookupError:
            final = None
        return {
            "scenario": self.scenario,
            "ok": self.ok,
            "error": self.error,
            "group_id": self.group_id,
            "bootstrap_servers": self.bootstrap_servers,
            "assignor": self.assignor,
            "group_protocol": self.group_protocol,
            "topics": dict(self.topics),
            "partitions": dict(self.partitions),
            "started_ts_ms": self.started_ts_ms,
            "duration_s": round(self.duration_s, 3),
            "steps": [s.to_json(self.started_ts_ms) for s in self.steps],
            "final": final.to_json() if final else None,
            "committed_partitions": self.committed_partitions,
            "checks": [c.to_json() for c in self.checks],
            "events": [e.to_json() for e in self.events],
        }


# --------------------------------------------------------------------------- checks

Verify = Callable[[ScenarioResult], str | None]
"""Returns ``None`` when the check holds, else what was found instead."""


@dataclass(frozen=True)
class Check:
    """One expected outcome. ``assignors`` (``protocols``) limits it to runs with those
    assignors (group protocols)."""

    description: str
    verify: Verify
    assignors: tuple[str, ...] = ()
    protocols: tuple[str, ...] = ()

    def applies_to(self, result: ScenarioResult) -> bool:
        return (not self.assignors or result.assignor in self.assignors) and (
            not self.protocols or result.group_protocol in self.protocols
        )


def evaluate_checks(scenario: Scenario, result: ScenarioResult) -> tuple[CheckResult, ...]:
    """Every applicable check of ``scenario`` (its own, then the common ones) on ``result``."""
    out = []
    for check in (*scenario.checks, *COMMON_CHECKS):
        if not check.applies_to(result):
            continue
        try:
            problem = check.verify(result)
        except (KeyError, LookupError, StopIteration, ValueError) as exc:
            problem = f"cannot evaluate: {exc}"
        out.append(
            CheckResult(description=check.description, ok=problem is None, detail=problem or "")
        )
    return tuple(out)


def _fmt(assignment: Mapping[str, Assignment]) -> str:
    return "; ".join(
        f"{name}: " + " ".join(f"{t}{ps}" for t, ps in topics.items())
        for name, topics in assignment.items()
    )


def expect_assignment(label: str, expected: Mapping[str, Assignment]) -> Verify:
    """The members at ``label`` are exactly ``expected`` (name -> topic -> partitions)."""

    def verify(result: ScenarioResult) -> str | None:
        got = result.stable(label).assignment
        want = {name: {t: sorted(ps) for t, ps in a.items() if ps} for name, a in expected.items()}
        return None if got == want else f"got {_fmt(got)}"

    return verify


def expect_counts(label: str, counts: Mapping[str, int]) -> Verify:
    def verify(result: ScenarioResult) -> str | None:
        got = result.stable(label).counts()
        return None if got == dict(counts) else f"got {got}"

    return verify


def expect_balanced(label: str) -> Verify:
    def verify(result: ScenarioResult) -> str | None:
        counts = result.stable(label).counts()
        return None if max(counts.values()) - min(counts.values()) <= 1 else f"got {counts}"

    return verify


def expect_generation_rose(*labels: str, by_at_least: int = 1) -> Verify:
    def verify(result: ScenarioResult) -> str | None:
        gens = [result.stable(label).generation for label in labels]
        ok = all(b - a >= by_at_least for a, b in itertools.pairwise(gens))
        return None if ok else "generations " + " -> ".join(map(str, gens))

    return verify


def expect_same_group(before: str, after: str) -> Verify:
    """Same generation and the same partitions per member name."""

    def verify(result: ScenarioResult) -> str | None:
        a, b = result.stable(before), result.stable(after)
        if a.generation != b.generation:
            return f"generation {a.generation} -> {b.generation}"
        if a.assignment != b.assignment:
            return f"before {_fmt(a.assignment)}; after {_fmt(b.assignment)}"
        return None

    return verify


def expect_kept(
    before: str, after: str, names: Sequence[str], *, keep: int | None = None
) -> Verify:
    """Each of ``names`` still holds what it held at ``before`` (or ``keep`` of it)."""

    def verify(result: ScenarioResult) -> str | None:
        a, b = result.stable(before), result.stable(after)
        problems = []
        for name in names:
            held = set(a.member(name).partitions)
            kept = held & set(b.member(name).partitions)
            want = len(held) if keep is None else keep
            if len(kept) != want:
                problems.append(f"{name} kept {len(kept)} of {len(held)}")
        return "; ".join(problems) or None

    return verify


def expect_incremental_revocations(before: str, after: str, names: Sequence[str]) -> Verify:
    """Between the stable points ``before`` and ``after``, each of ``names`` revoked exactly
    the partitions it lost (never everything it held, as an eager rebalance does)."""

    def verify(result: ScenarioResult) -> str | None:
        a, b = result.stable(before), result.stable(after)
        since, until = result.step(before).ended_ts_ms, result.step(after).ended_ts_ms
        problems = []
        for name in names:
            lost = set(a.member(name).partitions) - set(b.member(name).partitions)
            revoked: set[PartitionKey] = set()
            for e in result.events_of(name, "revoked", since_ts_ms=since, until_ts_ms=until):
                revoked.update(e.partitions)
            if revoked != lost:
                problems.append(f"{name} revoked {sorted(revoked)}, lost {sorted(lost)}")
        return "; ".join(problems) or None

    return verify


def expect_seconds_to_stable(
    label: str, *, steps_back: int = 1, at_least_s: float = 0.0, below_s: float | None = None
) -> Verify:
    """The group at ``label`` was reached at least ``at_least_s`` and less than ``below_s``
    seconds after the start of the step ``steps_back`` before it."""

    def verify(result: ScenarioResult) -> str | None:
        took = result.seconds_to_stable(label, steps_back=steps_back)
        if took < at_least_s or (below_s is not None and took >= below_s):
            return f"took {took:.2f} s"
        return None

    return verify


def expect_holds(label: str, partitions: Iterable[PartitionKey], *, held: bool = True) -> Verify:
    wanted = sorted(partitions)

    def verify(result: ScenarioResult) -> str | None:
        holders = result.stable(label).holders()
        wrong = [tp for tp in wanted if (tp in holders) != held]
        if not wrong:
            return None
        return f"{'unassigned' if held else 'assigned'}: {wrong}"

    return verify


def expect_member_ids_changed(before: str, after: str, name: str) -> Verify:
    def verify(result: ScenarioResult) -> str | None:
        a, b = result.stable(before).member(name), result.stable(after).member(name)
        return None if a.member_id != b.member_id else f"still {a.member_id}"

    return verify


def expect_event(name: str, event: str) -> Verify:
    def verify(result: ScenarioResult) -> str | None:
        return None if result.events_of(name, event) else f"{name} printed no {event!r} line"

    return verify


def _every_stable_point_exact(result: ScenarioResult) -> str | None:
    for step in result.steps:
        if step.stable is None:
            continue
        holders = step.stable.holders()
        twice = {tp: names for tp, names in holders.items() if len(names) > 1}
        if twice:
            return f"{step.label}: held twice: {twice}"
        want = {
            (topic, p)
            for topic, count in result.partitions.items()
            for p in range(count)
            if (topic, p) in holders
        }
        if set(holders) != want:
            return f"{step.label}: unknown partitions {sorted(set(holders) - want)}"
    return None


def _broker_agrees(result: ScenarioResult) -> str | None:
    answered = 0
    for step in result.steps:
        snap = step.stable
        if snap is None or snap.broker_members is None:
            continue
        answered += 1
        if tuple(sorted(snap.names)) != snap.broker_members:
            return f"{step.label}: coordinator lists {snap.broker_members}, running {snap.names}"
    return None if answered else "DescribeGroups did not answer"


def _committed(result: ScenarioResult) -> str | None:
    if result.committed_partitions is None:
        return "the committed offsets could not be listed"
    return None if result.committed_partitions > 0 else "no committed offsets"


#: Checks every scenario gets.
COMMON_CHECKS: tuple[Check, ...] = (
    Check(
        "at every stable point each partition is held by one member only", _every_stable_point_exact
    ),
    Check(
        "the coordinator lists exactly the running members (DescribeGroups)",
        _broker_agrees,
        protocols=("classic",),
    ),
    Check("the members committed offsets (records in __consumer_offsets)", _committed),
)


# --------------------------------------------------------------------------- scenario


@dataclass(frozen=True, kw_only=True)
class Scenario:
    """A named script; validated on construction (:class:`ScenarioDefinitionError`).

    ``assignor_choices`` lists the assignors ``--assignor`` may switch the Python members to
    (empty: the assignor is part of the scenario).
    """

    name: str
    title: str
    source: str | None
    members: tuple[MemberSpec, ...]
    steps: tuple[Step, ...]
    checks: tuple[Check, ...] = ()
    assignor_choices: tuple[str, ...] = ()
    notes: str = ""
    _by_name: Mapping[str, MemberSpec] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_name", {m.name: m for m in self.members})
        self.validate()

    def member(self, name: str) -> MemberSpec:
        try:
            return self._by_name[name]
        except KeyError:
            raise ScenarioDefinitionError(f"{self.name}: no member named {name!r}") from None

    @property
    def needs_java(self) -> bool:
        return any(m.kind == "java" for m in self.members)

    @property
    def assignor(self) -> str:
        """The assignor of the scenario's members (the first member's)."""
        return self.members[0].assignor

    @property
    def group_protocol(self) -> GroupProtocol:
        return self.members[0].group_protocol

    def with_assignor(self, assignor: str) -> Scenario:
        """The same scenario with every Python member on ``assignor``."""
        if assignor == self.assignor:
            return self
        if assignor not in self.assignor_choices:
            choices = ", ".join(self.assignor_choices) or f"only {self.assignor}"
            raise ScenarioDefinitionError(
                f"{self.name}: --assignor {assignor} not available (choices: {choices})"
            )
        members = tuple(
            replace(m, assignor=assignor) if m.kind == "python" else m for m in self.members
        )
        return replace(self, members=members)

    def validate(self) -> None:
        """Walk the steps as the runner would and fail on the first inconsistency."""

        def fail(index: int, message: str) -> ScenarioDefinitionError:
            return ScenarioDefinitionError(f"{self.name}, step {index}: {message}")

        if not _NAME.fullmatch(self.name):
            raise ScenarioDefinitionError(f"scenario name {self.name!r} must match {_NAME.pattern}")
        if len(self._by_name) != len(self.members):
            raise ScenarioDefinitionError(f"{self.name}: member names are not unique")
        protocols = {m.group_protocol for m in self.members}
        if len(protocols) != 1:
            raise ScenarioDefinitionError(f"{self.name}: members mix group protocols {protocols}")
        if not self.steps or not isinstance(self.steps[-1], WaitStable | WaitGroupEmpty):
            raise ScenarioDefinitionError(
                f"{self.name}: the last step must be WaitStable or WaitGroupEmpty"
            )
        for choice in self.assignor_choices:
            if choice not in CLASSIC_ASSIGNORS:
                raise ScenarioDefinitionError(f"{self.name}: unknown assignor choice {choice!r}")
        topics: dict[str, int] = {}
        running: set[str] = set()
        started: set[str] = set()
        labels: set[str] = set()
        for index, step in enumerate(self.steps, start=1):
            if isinstance(step, CreateTopics):
                for topic, count in step.topics:
                    if not _NAME.fullmatch(topic):
                        raise fail(index, f"topic name {topic!r} must match {_NAME.pattern}")
                    if topic in topics:
                        raise fail(index, f"topic {topic} already exists")
                    if count < 1:
                        raise fail(index, f"topic {topic} needs at least one partition")
                    topics[topic] = count
            elif isinstance(step, SetGroupConfig):
                if not step.configs:
                    raise fail(index, "no group configs given")
            elif isinstance(step, StartMember):
                spec = self.member(step.name)
                if step.name in running:
                    raise fail(index, f"{step.name} is already running")
                missing = [t for t in spec.topics if t not in topics]
                if missing:
                    raise fail(index, f"{step.name} subscribes to topics not created: {missing}")
                running.add(step.name)
                started.add(step.name)
            elif isinstance(step, KillMember | CloseMember):
                self.member(step.name)
                if step.name not in running:
                    raise fail(index, f"{step.name} is not running")
                running.discard(step.name)
            elif isinstance(step, AddPartitions):
                if step.topic not in topics:
                    raise fail(index, f"topic {step.topic} does not exist")
                if step.total <= topics[step.topic]:
                    raise fail(
                        index,
                        f"{step.topic} has {topics[step.topic]} partitions; "
                        f"cannot grow to {step.total}",
                    )
                topics[step.topic] = step.total
            elif isinstance(step, Pause):
                if not 0 < step.seconds <= 60:
                    raise fail(index, "a pause lasts more than 0 and at most 60 seconds")
            elif isinstance(step, WaitStable):
                if not running:
                    raise fail(index, "no member is running")
                if step.label in labels:
                    raise fail(index, f"label {step.label!r} used twice")
                if step.timeout_s <= 0:
                    raise fail(index, "timeout_s must be positive")
                labels.add(step.label)
                if not any(self.member(n).subscribes(t) for n in running for t in topics):
                    raise fail(index, "the running members subscribe to no existing topic")
            elif isinstance(step, WaitGroupEmpty):
                if running:
                    raise fail(index, f"members still running: {sorted(running)}")
                if step.label in labels:
                    raise fail(index, f"label {step.label!r} used twice")
                if step.timeout_s <= 0:
                    raise fail(index, "timeout_s must be positive")
                labels.add(step.label)
        unused = set(self._by_name) - started
        if unused:
            raise ScenarioDefinitionError(f"{self.name}: members never started: {sorted(unused)}")


# --------------------------------------------------------------------------- the scenarios


def _members(names: Sequence[str], **common: Any) -> tuple[MemberSpec, ...]:
    return tuple(MemberSpec(name=name, **common) for name in names)


def _a(**topics: Sequence[int]) -> Assignment:
    return {topic: list(ps) for topic, ps in topics.items()}


def _join_one_by_one() -> Scenario:
    clients = ("client-1", "client-2", "client-3")
    return Scenario(
        name="join-one-by-one",
        title="4 partitions, 3 clients joining one by one; every join rebalances",
        source="001",
        members=_members(clients, topics=("topic",)),
        steps=(
            CreateTopics((("topic", 4),)),
            StartMember("client-1"),
            WaitStable("one"),
            StartMember("client-2"),
            WaitStable("two"),
            StartMember("client-3"),
            WaitStable("three"),
        ),
        checks=(
            Check(
                "client-1 alone holds all 4 partitions",
                expect_assignment("one", {"client-1": _a(topic=range(4))}),
            ),
            Check(
                "every join raised the generation", expect_generation_rose("one", "two", "three")
            ),
            Check("the 3 clients hold 4 partitions, balanced", expect_balanced("three")),
            Check(
                "range, 2 members: client-1 0,1; client-2 2,3",
                expect_assignment(
                    "two", {"client-1": _a(topic=[0, 1]), "client-2": _a(topic=[2, 3])}
                ),
                assignors=("range",),
            ),
            Check(
                "range, 3 members: client-1 0,1; client-2 2; client-3 3 (2,1,1 by member order)",
                expect_assignment(
                    "three",
                    {
                        "client-1": _a(topic=[0, 1]),
                        "client-2": _a(topic=[2]),
                        "client-3": _a(topic=[3]),
                    },
                ),
                assignors=("range",),
            ),
            Check(
                "roundrobin, 3 members: client-1 0,3; client-2 1; client-3 2",
                expect_assignment(
                    "three",
                    {
                        "client-1": _a(topic=[0, 3]),
                        "client-2": _a(topic=[1]),
                        "client-3": _a(topic=[2]),
                    },
                ),
                assignors=("roundrobin",),
            ),
            Check(
                "sticky: the first two clients keep 3 of their 4 partitions when client-3 joins",
                _kept_total("two", "three", ("client-1", "client-2"), 3),
                assignors=("sticky", "cooperative-sticky"),
            ),
        ),
        assignor_choices=CLASSIC_ASSIGNORS,
        notes="The article's clients were ordered by random member ids; here client.id = "
        "name, so member ids sort client-1 < client-2 < client-3.",
    )


def _kept_total(before: str, after: str, names: Sequence[str], total: int) -> Verify:
    def verify(result: ScenarioResult) -> str | None:
        a, b = result.stable(before), result.stable(after)
        kept = sum(len(set(a.member(n).partitions) & set(b.member(n).partitions)) for n in names)
        return None if kept == total else f"kept {kept}"

    return verify


_ORDER_STOCK_BEFORE = {
    "range": {
        "C1": _a(Order=[0, 1, 2], Stock=[0, 1]),
        "C2": _a(Order=[3, 4], Stock=[2, 3]),
        "C3": _a(Order=[5, 6], Stock=[4]),
    },
    "roundrobin": {
        "C1": _a(Order=[0, 3, 6], Stock=[2]),
        "C2": _a(Order=[1, 4], Stock=[0, 3]),
        "C3": _a(Order=[2, 5], Stock=[1, 4]),
    },
}
_ORDER_STOCK_AFTER = {
    "range": {
        "C1": _a(Order=[0, 1, 2, 3], Stock=[0, 1, 2]),
        "C2": _a(Order=[4, 5, 6], Stock=[3, 4]),
    },
    "roundrobin": {
        "C1": _a(Order=[0, 2, 4, 6], Stock=[1, 3]),
        "C2": _a(Order=[1, 3, 5], Stock=[0, 2, 4]),
    },
}

CRASH_SESSION_TIMEOUT_MS = 2_000


def _crash() -> Scenario:
    session = CRASH_SESSION_TIMEOUT_MS
    heartbeat = MemberSpec(
        name="x", topics=("x",), session_timeout_ms=session
    ).heartbeat_interval_ms
    checks: list[Check] = [
        Check("2 members hold all 12 partitions", expect_counts_total("after", 2, 12)),
        Check("the generation rose after the crash", expect_generation_rose("before", "after")),
        Check(
            f"the crash was noticed only after the session timeout "
            f"(>= {session - heartbeat} ms: session.timeout.ms - heartbeat.interval.ms)",
            expect_seconds_to_stable("after", at_least_s=(session - heartbeat) / 1000),
        ),
    ]
    for assignor, expected in _ORDER_STOCK_BEFORE.items():
        checks.append(
            Check(
                f"{assignor}, C1..C3: as document 004 (corrected) shows",
                expect_assignment("before", expected),
                assignors=(assignor,),
            )
        )
    for assignor, expected in _ORDER_STOCK_AFTER.items():
        checks.append(
            Check(
                f"{assignor}, after C3 crashed: " + _fmt(expected),
                expect_assignment("after", expected),
                assignors=(assignor,),
            )
        )
    checks.append(
        Check(
            "sticky: C1 and C2 keep everything they held; 6 partitions each",
            _all_of(
                expect_kept("before", "after", ("C1", "C2")),
                expect_counts("after", {"C1": 6, "C2": 6}),
            ),
            assignors=("sticky", "cooperative-sticky"),
        )
    )
    return Scenario(
        name="crash",
        title="kill -9 one of 3 members on Order (7 partitions) + Stock (5)",
        source="004",
        members=_members(("C1", "C2", "C3"), topics=("Order", "Stock"), session_timeout_ms=session),
        steps=(
            CreateTopics((("Order", 7), ("Stock", 5))),
            StartMember("C1"),
            StartMember("C2"),
            StartMember("C3"),
            WaitStable("before"),
            Pause(3.0, "they commit every second, as a live group would before a crash"),
            KillMember("C3"),
            WaitStable("after"),
        ),
        checks=tuple(checks),
        assignor_choices=CLASSIC_ASSIGNORS,
    )


def expect_counts_total(label: str, members: int, partitions: int) -> Verify:
    def verify(result: ScenarioResult) -> str | None:
        snap = result.stable(label)
        total = sum(snap.counts().values())
        if len(snap.members) == members and total == partitions == len(snap.holders()):
            return None
        return f"{len(snap.members)} members hold {total} ({len(snap.holders())} distinct)"

    return verify


def _all_of(*verifies: Verify) -> Verify:
    def verify(result: ScenarioResult) -> str | None:
        problems = [p for v in verifies if (p := v(result)) is not None]
        return "; ".join(problems) or None

    return verify


LEAVE_SESSION_TIMEOUT_MS = 10_000


def _graceful_leave() -> Scenario:
    session = LEAVE_SESSION_TIMEOUT_MS
    return Scenario(
        name="graceful-leave",
        title="a member closes cleanly (LeaveGroup): no wait for the session timeout",
        source="003",
        members=_members(("C1", "C2", "C3"), topics=("events",), session_timeout_ms=session),
        steps=(
            CreateTopics((("events", 6),)),
            StartMember("C1"),
            StartMember("C2"),
            StartMember("C3"),
            WaitStable("before"),
            CloseMember("C2"),
            WaitStable("after"),
        ),
        checks=(
            Check("C1 and C3 hold all 6 partitions", expect_counts_total("after", 2, 6)),
            Check("the generation rose", expect_generation_rose("before", "after")),
            Check(
                f"the group rebalanced well before session.timeout.ms={session} (LeaveGroup)",
                expect_seconds_to_stable("after", below_s=session / 1000 / 2),
            ),
            Check("C2 closed cleanly", expect_event("C2", "closed")),
            Check(
                "range: C1 0,1,2; C3 3,4,5",
                expect_assignment(
                    "after", {"C1": _a(events=[0, 1, 2]), "C3": _a(events=[3, 4, 5])}
                ),
                assignors=("range",),
            ),
        ),
        assignor_choices=CLASSIC_ASSIGNORS,
    )


def _partition_increase() -> Scenario:
    return Scenario(
        name="partition-increase",
        title="the topic grows from 2 to 4 partitions; the group rebalances",
        source="000",
        members=_members(("C1", "C2"), topics=("events",)),
        steps=(
            CreateTopics((("events", 2),)),
            StartMember("C1"),
            StartMember("C2"),
            WaitStable("before"),
            AddPartitions("events", 4),
            WaitStable("after"),
        ),
        checks=(
            Check(
                "the new partitions 2 and 3 are assigned",
                expect_holds("after", [("events", 2), ("events", 3)]),
            ),
            Check("the generation rose", expect_generation_rose("before", "after")),
            Check(
                "range: C1 0,1; C2 2,3",
                expect_assignment("after", {"C1": _a(events=[0, 1]), "C2": _a(events=[2, 3])}),
                assignors=("range",),
            ),
        ),
        assignor_choices=CLASSIC_ASSIGNORS,
    )


def _regex_subscription() -> Scenario:
    return Scenario(
        name="regex-subscription",
        title="a pattern subscription (events-.*) picks up a newly created topic",
        source="000",
        members=_members(("C1", "C2"), pattern="events-.*"),
        steps=(
            CreateTopics((("events-a", 2),)),
            StartMember("C1"),
            StartMember("C2"),
            WaitStable("before"),
            CreateTopics((("events-b", 2), ("audit", 1))),
            WaitStable("after"),
        ),
        checks=(
            Check(
                "events-b is assigned", expect_holds("after", [("events-b", 0), ("events-b", 1)])
            ),
            Check(
                "audit (not matching) is not assigned",
                expect_holds("after", [("audit", 0)], held=False),
            ),
            Check("the generation rose", expect_generation_rose("before", "after")),
            Check(
                "range: C1 events-a 0 + events-b 0; C2 events-a 1 + events-b 1",
                expect_assignment(
                    "after",
                    {
                        "C1": {"events-a": [0], "events-b": [0]},
                        "C2": {"events-a": [1], "events-b": [1]},
                    },
                ),
                assignors=("range",),
            ),
        ),
        assignor_choices=CLASSIC_ASSIGNORS,
    )


STATIC_SESSION_TIMEOUT_MS = 10_000


def _static_restart() -> Scenario:
    session = STATIC_SESSION_TIMEOUT_MS
    return Scenario(
        name="static-restart",
        title="a static member restarts within its session timeout: no rebalance",
        source=None,
        members=(
            MemberSpec(
                name="S1", topics=("events",), instance_id="static-1", session_timeout_ms=session
            ),
            MemberSpec(
                name="S2", topics=("events",), instance_id="static-2", session_timeout_ms=session
            ),
        ),
        steps=(
            CreateTopics((("events", 4),)),
            StartMember("S1"),
            StartMember("S2"),
            WaitStable("before"),
            CloseMember("S2"),
            StartMember("S2"),
            WaitStable("after"),
        ),
        checks=(
            Check(
                "same generation and same partitions per member after the restart",
                expect_same_group("before", "after"),
            ),
            Check(
                "S2 came back as a new process under the same group.instance.id (new member id)",
                expect_member_ids_changed("before", "after", "S2"),
            ),
            Check(
                f"the restart took less than session.timeout.ms={session}",
                expect_seconds_to_stable("after", steps_back=2, below_s=session / 1000),
            ),
        ),
        assignor_choices=CLASSIC_ASSIGNORS,
    )


def _cooperative() -> Scenario:
    return Scenario(
        name="cooperative",
        title="cooperative-sticky (KIP-429): a join moves only what must move",
        source=None,
        members=_members(("C1", "C2", "C3"), topics=("events",), assignor="cooperative-sticky"),
        steps=(
            CreateTopics((("events", 6),)),
            StartMember("C1"),
            WaitStable("one"),
            StartMember("C2"),
            WaitStable("two"),
            StartMember("C3"),
            WaitStable("three"),
        ),
        checks=(
            Check(
                "3 members, 2 partitions each", expect_counts("three", {"C1": 2, "C2": 2, "C3": 2})
            ),
            Check(
                "C2's join: C1 keeps 3 of its 6 partitions",
                expect_kept("one", "two", ("C1",), keep=3),
            ),
            Check(
                "C3's join: C1 and C2 keep 2 of their 3 partitions each",
                expect_kept("two", "three", ("C1", "C2"), keep=2),
            ),
            Check(
                "C3's join: C1 and C2 revoke only what moves to C3 (no revoke-everything)",
                expect_incremental_revocations("two", "three", ("C1", "C2")),
            ),
            Check(
                "C3's join took two rebalance rounds (generation +2: revoke, then assign)",
                expect_generation_rose("two", "three", by_at_least=2),
            ),
        ),
    )


KIP848_GROUP_CONFIG = (
    ("consumer.heartbeat.interval.ms", "500"),
    ("consumer.session.timeout.ms", "3000"),
)


def _kip848() -> Scenario:
    return Scenario(
        name="kip848",
        title="KIP-848 consumer protocol: Java members, server-side uniform assignor",
        source=None,
        members=_members(
            ("J1", "J2"),
            topics=("events",),
            kind="java",
            group_protocol="consumer",
            assignor="uniform",
        ),
        steps=(
            CreateTopics((("events", 6),)),
            SetGroupConfig(KIP848_GROUP_CONFIG),
            StartMember("J1"),
            WaitStable("one"),
            StartMember("J2"),
            WaitStable("two"),
            AddPartitions("events", 8),
            WaitStable("three"),
        ),
        checks=(
            Check("J1 alone holds all 6 partitions", expect_counts("one", {"J1": 6})),
            Check("J2's join spreads the partitions 3/3", expect_counts("two", {"J1": 3, "J2": 3})),
            Check(
                "J2's join: J1 revokes only the 3 partitions that move",
                expect_incremental_revocations("one", "two", ("J1",)),
            ),
            Check(
                "8 partitions spread 4/4 after the increase",
                expect_counts("three", {"J1": 4, "J2": 4}),
            ),
            Check(
                "the increase moved nothing: J1 and J2 keep their partitions",
                _all_of(
                    expect_kept("two", "three", ("J1", "J2")),
                    expect_incremental_revocations("two", "three", ("J1", "J2")),
                ),
            ),
            Check(
                "the member epochs rose with every change",
                expect_generation_rose("one", "two", "three"),
            ),
        ),
    )


#: The steps of :func:`tracker_steps`: topics, sessions.
TRACKER_STEPS_TOPICS = (("Order", 7), ("Stock", 5), ("Big", 12))
TRACKER_STEPS_SESSION_MS = 6_000
TRACKER_STEPS_STATIC_SESSION_MS = 15_000
#: Generous: on a loaded machine a JVM's first join can take most of a minute.
STEPS_TIMEOUT_S = 120.0


def tracker_steps(group_protocol: GroupProtocol, assignor: str) -> Scenario:
    """Every kind of rebalance the tracker judges, with real Java members (kafka-clients).

    Topics Order 7, Stock 5 and Big 12 partitions; members A, B and C (6 s session) and a
    static member D (15 s session; a KIP-848 group has one session timeout for everyone,
    ``consumer.session.timeout.ms`` = 6 s). The steps: A, B and C join one by one; B is
    killed (kill -9); C closes; D joins; Stock grows to 8 partitions; D restarts within its
    session; D closes (a static member sends no LeaveGroup) and A leaves while the
    coordinator waits out D's session, which empties the group. ``tests/integration/
    test_java_groups.py`` checks what the tracker makes of every rebalance.
    """
    session = TRACKER_STEPS_SESSION_MS
    static_session = TRACKER_STEPS_STATIC_SESSION_MS if group_protocol == "classic" else session
    topics = tuple(t for t, _n in TRACKER_STEPS_TOPICS)
    common: dict[str, Any] = {
        "topics": topics,
        "kind": "java",
        "group_protocol": group_protocol,
        "assignor": assignor,
    }
    members = (
        *(MemberSpec(name=n, session_timeout_ms=session, **common) for n in ("A", "B", "C")),
        MemberSpec(name="D", instance_id="D", session_timeout_ms=static_session, **common),
    )
    config: tuple[Step, ...] = ()
    if group_protocol == "consumer":
        config = (
            SetGroupConfig(
                (
                    ("consumer.session.timeout.ms", str(session)),
                    ("consumer.heartbeat.interval.ms", "500"),
                )
            ),
        )
    steps: tuple[Step, ...] = (
        CreateTopics(TRACKER_STEPS_TOPICS),
        *config,
        StartMember("A"),
        WaitStable("A", timeout_s=STEPS_TIMEOUT_S),
        StartMember("B"),
        WaitStable("A+B", timeout_s=STEPS_TIMEOUT_S),
        StartMember("C"),
        WaitStable("A+B+C", timeout_s=STEPS_TIMEOUT_S),
        Pause(3, "a commit history before the crash"),
        KillMember("B"),
        WaitStable("B crashed", timeout_s=STEPS_TIMEOUT_S),
        CloseMember("C"),
        WaitStable("C left", timeout_s=STEPS_TIMEOUT_S),
        StartMember("D"),
        WaitStable("D joined", timeout_s=STEPS_TIMEOUT_S),
        AddPartitions("Stock", 8),
        WaitStable("Stock grew", timeout_s=STEPS_TIMEOUT_S),
        CloseMember("D"),
        StartMember("D"),
        WaitStable("D restarted", timeout_s=STEPS_TIMEOUT_S),
        Pause(3, "a commit history before the last departures"),
        CloseMember("D"),
        CloseMember("A"),
        WaitGroupEmpty("emptied", timeout_s=STEPS_TIMEOUT_S),
    )
    name = f"steps-{'kip848-' if group_protocol == 'consumer' else ''}{assignor}"
    return Scenario(
        name=name,
        title=f"every kind of rebalance, Java members, {group_protocol} protocol, {assignor}",
        source=None,
        members=members,
        steps=steps,
    )


#: Every scenario, by name, in the order ``--list`` shows them.
SCENARIOS: Mapping[str, Scenario] = {
    s.name: s
    for s in (
        _join_one_by_one(),
        _crash(),
        _graceful_leave(),
        _partition_increase(),
        _regex_subscription(),
        _static_restart(),
        _cooperative(),
        _kip848(),
    )
}


def get_scenario(name: str) -> Scenario:
    try:
        return SCENARIOS[name]
    except KeyError:
        raise ScenarioDefinitionError(
            f"unknown scenario {name!r}; --list shows: {', '.join(SCENARIOS)}"
        ) from None


def describe_scenarios() -> str:
    """What ``simulate --list`` prints: one line per scenario with its source document."""
    width = max(len(name) for name in SCENARIOS)
    lines = []
    for s in SCENARIOS.values():
        source = f"doc {s.source}" if s.source else "-"
        lines.append(f"{s.name:<{width}}  {source:<7}  {s.title}")
    return "\n".join(lines)
