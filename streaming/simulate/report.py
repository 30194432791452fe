"""The simulator's progress output: :class:`TextReporter` for a person, :class:`JsonReporter`
for a program (one JSON object per line), :class:`Reporter` (prints nothing) for tests.

:func:`~streaming.simulate.runner.run_scenario` calls a reporter as each step starts and
ends, as each member reports and when the scenario is over; :func:`format_assignment` is how
every line shows a set of partitions (``Order 0-3 · Stock 0,1``).
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TextIO

from streaming.simulate.model import PartitionKey
from streaming.simulate.scenarios import MemberEvent, Scenario, ScenarioResult, Step, StepResult

if TYPE_CHECKING:
    from streaming.simulate.runner import RunNames

__all__ = [
    "JSON_TYPES",
    "JsonReporter",
    "Reporter",
    "TextReporter",
    "format_assignment",
]


# --------------------------------------------------------------------------- formatting


def _ranges(partitions: Sequence[int]) -> str:
    """``[0, 1, 2, 3, 5]`` -> ``0-3,5``; runs shorter than three stay a list."""
    out: list[str] = []
    ps = sorted(partitions)
    i = 0
    while i < len(ps):
        j = i
        while j + 1 < len(ps) and ps[j + 1] == ps[j] + 1:
            j += 1
        if j - i >= 2:
            out.append(f"{ps[i]}-{ps[j]}")
        else:
            out.extend(str(p) for p in ps[i : j + 1])
        i = j + 1
    return ",".join(out)


def format_assignment(partitions: Sequence[PartitionKey]) -> str:
    """``Order 0-3 · Stock 0,1`` (``-`` when empty)."""
    by_topic: dict[str, list[int]] = {}
    for topic, p in sorted(partitions):
        by_topic.setdefault(topic, []).append(p)
    return " · ".join(f"{t} {_ranges(ps)}" for t, ps in by_topic.items()) or "-"


# --------------------------------------------------------------------------- reporters


class Reporter:
    """Receives progress as it happens; this base class ignores everything (tests)."""

    def scenario_started(self, scenario: Scenario, names: RunNames, bootstrap: str) -> None:
        pass

    def step_started(
        self, index: int, total: int, step: Step, description: str, at_s: float
    ) -> None:
        pass

    def member_event(self, event: MemberEvent, at_s: float) -> None:
        pass

    def step_finished(self, result: StepResult, at_s: float) -> None:
        pass

    def note(self, text: str, at_s: float) -> None:
        pass

    def scenario_finished(self, result: ScenarioResult) -> None:
        pass


class TextReporter(Reporter):
    """Progress for a person: each step, the members' reports, the group at stable points,
    the checks."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self._out = stream or sys.stdout

    def _say(self, text: str) -> None:
        with contextlib.suppress(BrokenPipeError, ValueError):
            self._out.write(text + "\n")
            self._out.flush()

    def scenario_started(self, scenario: Scenario, names: RunNames, bootstrap: str) -> None:
        source = f"  [document {scenario.source}]" if scenario.source else ""
        self._say(f"== {scenario.name}: {scenario.title}{source}")
        self._say(
            f"   group {names.group_id} on {bootstrap}, {scenario.group_protocol} protocol, "
            f"assignor {scenario.assignor}"
        )

    def step_started(
        self, index: int, total: int, step: Step, description: str, at_s: float
    ) -> None:
        self._say(f"[{at_s:6.1f}s] step {index}/{total}: {description}")

    def member_event(self, event: MemberEvent, at_s: float) -> None:
        prefix = f"[{at_s:6.1f}s]     {event.name:<9}"
        if event.event == "assignment":
            member = event.member_id or "?"
            short = member if len(member) <= 14 else member[:13] + "…"
            self._say(
                f"{prefix} generation {event.generation}, member {short}: "
                f"{format_assignment(event.partitions)}"
            )
        elif event.event in ("revoked", "assigned", "lost"):
            callback = {"revoked": "Revoked", "assigned": "Assigned", "lost": "Lost"}[event.event]
            self._say(f"{prefix} onPartitions{callback}({format_assignment(event.partitions)})")
        elif event.event == "started":
            self._say(f"{prefix} process started, pid {event.pid}")
        elif event.event == "closed":
            self._say(f"{prefix} closed cleanly, pid {event.pid} ({event.message or ''})")
        elif event.event == "error":
            self._say(f"{prefix} ERROR {event.message}")

    def step_finished(self, result: StepResult, at_s: float) -> None:
        snap = result.stable
        if snap is None:
            if result.detail:
                self._say(f"[{at_s:6.1f}s]     -> {result.detail}")
            return
        broker = ""
        if snap.broker_members is not None:
            broker = f"; the coordinator lists {', '.join(snap.broker_members) or 'nobody'}"
        reached_s = (snap.reached_ts_ms - result.started_ts_ms) / 1000
        self._say(
            f"[{at_s:6.1f}s]     -> stable at generation {snap.generation} "
            f"({max(0.0, reached_s):.1f} s into the step): {', '.join(snap.names)}{broker}"
        )
        width = max(len(n) for n in snap.names)
        for m in snap.members:
            self._say(f"{'':>14}{m.name:<{width}}  {format_assignment(m.partitions)}")

    def note(self, text: str, at_s: float) -> None:
        self._say(f"[{at_s:6.1f}s]     {text}")

    def scenario_finished(self, result: ScenarioResult) -> None:
        if result.error:
            self._say(f"   error: {result.error}")
        if result.checks:
            self._say("   checks:")
        for check in result.checks:
            mark = "ok  " if check.ok else "FAIL"
            detail = f"  ({check.detail})" if check.detail else ""
            self._say(f"     {mark} {check.description}{detail}")
        verdict = "ok" if result.ok else "FAILED"
        self._say(f"   {result.scenario}: {verdict} in {result.duration_s:.1f} s")
        self._say("")


#: The ``type`` of each line ``--json`` prints.
JSON_TYPES = ("scenario", "step", "member", "note", "result")


class JsonReporter(Reporter):
    """Machine-readable progress: one JSON object per line (``type``: ``scenario``,
    ``step``, ``member``, ``note``, ``result``)."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self._out = stream or sys.stdout
        self._scenario = ""

    def _emit(self, obj: dict[str, Any]) -> None:
        with contextlib.suppress(BrokenPipeError, ValueError):
            self._out.write(json.dumps(obj, separators=(",", ":")) + "\n")
            self._out.flush()

    def scenario_started(self, scenario: Scenario, names: RunNames, bootstrap: str) -> None:
        self._scenario = scenario.name
        self._emit(
            {
                "type": "scenario",
                "scenario": scenario.name,
                "title": scenario.title,
                "source": scenario.source,
                "group_id": names.group_id,
                "bootstrap_servers": bootstrap,
                "assignor": scenario.assignor,
            }
        )

    def member_event(self, event: MemberEvent, at_s: float) -> None:
        self._emit(
            {
                "type": "member",
                "scenario": self._scenario,
                "at_s": round(at_s, 3),
                **event.to_json(),
            }
        )

    def step_finished(self, result: StepResult, at_s: float) -> None:
        self._emit({"type": "step", "scenario": self._scenario, **result.to_json()})

    def note(self, text: str, at_s: float) -> None:
        self._emit(
            {"type": "note", "scenario": self._scenario, "at_s": round(at_s, 3), "text": text}
        )

    def scenario_finished(self, result: ScenarioResult) -> None:
        self._emit({"type": "result", **result.to_json()})
