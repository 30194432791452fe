"""The checks of a scenario run: :func:`evaluate_checks`, the ``expect_*`` builders each
scenario uses, and the checks every scenario gets (:data:`COMMON_CHECKS`). Pure functions of a
:class:`~streaming.simulate.model.ScenarioResult`."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence

from streaming.simulate.model import (
    Assignment,
    Check,
    CheckResult,
    PartitionKey,
    Scenario,
    ScenarioResult,
    Verify,
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


def describe_assignment(assignment: Mapping[str, Assignment]) -> str:
    return "; ".join(
        f"{name}: " + " ".join(f"{t}{ps}" for t, ps in topics.items())
        for name, topics in assignment.items()
    )


def expect_assignment(label: str, expected: Mapping[str, Assignment]) -> Verify:
    """The members at ``label`` are exactly ``expected`` (name -> topic -> partitions)."""

    def verify(result: ScenarioResult) -> str | None:
        got = result.stable(label).assignment
        want = {name: {t: sorted(ps) for t, ps in a.items() if ps} for name, a in expected.items()}
        return None if got == want else f"got {describe_assignment(got)}"

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
            was, now = describe_assignment(a.assignment), describe_assignment(b.assignment)
            return f"before {was}; after {now}"
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
