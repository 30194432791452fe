"""The simulator's model: members, steps, results, checks as values, and the
:class:`Scenario` that declares them (pure; ``scenarios`` draws the whole picture)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Literal

from streaming.errors import EXIT_FAILED, EXIT_USAGE, ConfigError, RebalanceMonitorError

PartitionKey = tuple[str, int]
"""(logical topic, partition)."""

Assignment = dict[str, list[int]]
"""Logical topic -> sorted partitions, as shown and as tests compare them."""

MemberKind = Literal["python", "java", "librdkafka"]
GroupProtocol = Literal["classic", "consumer"]

#: Client-side assignors (classic protocol), by Kafka protocol name.
CLASSIC_ASSIGNORS = ("range", "roundrobin", "sticky", "cooperative-sticky")
#: The classic assignors librdkafka implements (no eager ``sticky``).
RDKAFKA_CLASSIC_ASSIGNORS = ("range", "roundrobin", "cooperative-sticky")
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
        allowed: tuple[str, ...] = (
            CLASSIC_ASSIGNORS if self.group_protocol == "classic" else SERVER_ASSIGNORS
        )
        if self.kind == "librdkafka" and self.group_protocol == "classic":
            allowed = RDKAFKA_CLASSIC_ASSIGNORS
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
