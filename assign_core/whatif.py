"""What if the group used another strategy? Every assignor on the same membership, compared.

:func:`compare` runs each strategy (client and server side) on one :class:`GroupSpec` and
reports, per strategy, the partitions per member, the :class:`~assign_core.metrics.Skew`, the
:class:`~assign_core.metrics.Churn` relative to the members' ``owned_partitions``, whether the
result is balanced, and cooperative-sticky's withheld partitions. :func:`compare_next` plays
the next rebalance: each strategy starts from what *it* assigned in the previous comparison
(e.g. after a member crashed). :func:`render_table` and :func:`to_json` present the result.

Metrics describe the *settled* assignment: the returned one plus the partitions
cooperative-sticky withholds for the follow-up rebalance, given to the member that will
receive them then. Churn is measured from the owned (previous) assignment to the settled
one, so a withheld partition counts as moved once, as it will be after both rounds.

An assignor that cannot assign (:class:`~assign_core.errors.AssignmentError`, where Java
throws) or is not available yet gives a :class:`StrategyFailure` row, not an exception.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from assign_core.assignors.registry import SERVER_STRATEGIES, STRATEGIES, get_assignor
from assign_core.errors import AssignmentError, ScenarioError
from assign_core.metrics.balance import is_balanced, min_moves_to_balance, subscriptions_equal
from assign_core.metrics.churn import Churn, churn, identities_of
from assign_core.metrics.skew import Skew, skew
from assign_core.model import Assignment, GroupSpec, Side, TopicPartition

__all__ = [
    "StrategyFailure",
    "StrategyOutcome",
    "WhatIf",
    "WhatIfRow",
    "compare",
    "compare_next",
    "render_json",
    "render_table",
    "settled_assignment",
    "to_json",
]


@dataclass(frozen=True, slots=True)
class StrategyOutcome:
    """One strategy's answer and its metrics (see the module docstring for *settled*)."""

    strategy: str
    side: Side
    assignment: Assignment
    withheld: Mapping[TopicPartition, str]
    settled: Assignment
    skew: Skew
    churn: Churn
    balanced: bool
    min_moves_to_balance: int
    min_moves_exact: bool

    @property
    def counts(self) -> dict[str, int]:
        """Member id -> partitions in the settled assignment."""
        return {m: len(tps) for m, tps in self.settled.items()}


@dataclass(frozen=True, slots=True)
class StrategyFailure:
    """A strategy that could not assign this membership (Java would throw)."""

    strategy: str
    side: Side
    error: str


WhatIfRow = StrategyOutcome | StrategyFailure


@dataclass(frozen=True, slots=True)
class WhatIf:
    """Every strategy's outcome for one membership, in the order they were run."""

    spec: GroupSpec
    rows: tuple[WhatIfRow, ...]

    @property
    def outcomes(self) -> tuple[StrategyOutcome, ...]:
        return tuple(r for r in self.rows if isinstance(r, StrategyOutcome))

    @property
    def best_balanced_moves(self) -> int | None:
        """The fewest partitions moved by a strategy whose result is balanced (None: none)."""
        moves = [o.churn.moved_partitions for o in self.outcomes if o.balanced]
        return min(moves, default=None)

    @property
    def best_balanced_strategies(self) -> tuple[str, ...]:
        """The balanced strategies that move :attr:`best_balanced_moves` partitions."""
        best = self.best_balanced_moves
        return tuple(
            o.strategy for o in self.outcomes if o.balanced and o.churn.moved_partitions == best
        )


def settled_assignment(
    assignment: Mapping[str, Sequence[TopicPartition]], withheld: Mapping[TopicPartition, str]
) -> Assignment:
    """``assignment`` with each withheld partition appended to its future owner's list."""
    out: Assignment = {m: list(tps) for m, tps in assignment.items()}
    for tp, member in withheld.items():
        out.setdefault(member, []).append(tp)
    return out


def _side(name: str) -> Side:
    return "server" if name in SERVER_STRATEGIES else "client"


def _check_names(strategies: Iterable[str] | None) -> tuple[str, ...]:
    names = tuple(STRATEGIES if strategies is None else strategies)
    for name in names:
        if name not in STRATEGIES:
            raise ScenarioError(
                "strategy", f"unknown strategy {name!r}; known: {', '.join(STRATEGIES)}"
            )
    return names


def _run(
    name: str,
    spec: GroupSpec,
    before: Mapping[str, Sequence[TopicPartition]],
    identities: Mapping[str, str] | None,
    min_moves: int,
) -> WhatIfRow:
    try:
        assignor = get_assignor(name)
    except ImportError as e:
        return StrategyFailure(name, _side(name), f"not available: {e}")
    try:
        result = assignor.assign(spec)
    except AssignmentError as e:
        return StrategyFailure(name, assignor.side, str(e) or type(e).__name__)
    settled = settled_assignment(result.assignment, result.withheld)
    return StrategyOutcome(
        strategy=name,
        side=assignor.side,
        assignment=result.assignment,
        withheld=dict(result.withheld),
        settled=settled,
        skew=skew(settled),
        churn=churn(before, settled, identities=identities),
        balanced=is_balanced(settled, spec),
        min_moves_to_balance=min_moves,
        min_moves_exact=subscriptions_equal(spec),
    )


def compare(spec: GroupSpec, strategies: Iterable[str] | None = None) -> WhatIf:
    """Run ``strategies`` (default: every registered one) on ``spec`` and compare them."""
    names = _check_names(strategies)
    before = {m.member_id: list(m.owned_partitions) for m in spec.members}
    moves = min_moves_to_balance(spec, before=before)
    return WhatIf(spec, tuple(_run(name, spec, before, None, moves) for name in names))


def compare_next(previous: WhatIf, spec: GroupSpec) -> WhatIf:
    """The next rebalance, ``spec``'s members, each strategy starting from its own result.

    For every strategy that succeeded in ``previous``, ``spec``'s members own what that
    strategy settled on (matched by identity: a static member keeps its partitions under a
    new member id) at the next generation; new members own nothing. Churn and the minimum
    moves are measured from that previous settled assignment, departed members included.
    Strategies that failed in ``previous`` run on ``spec`` as given.
    """
    identities = identities_of(previous.spec, spec)
    generation = 1 + max((m.generation or 0 for m in previous.spec.members), default=0)
    rows: list[WhatIfRow] = []
    for row in previous.rows:
        if isinstance(row, StrategyFailure):
            before = {m.member_id: list(m.owned_partitions) for m in spec.members}
            moves = min_moves_to_balance(spec, before=before)
            rows.append(_run(row.strategy, spec, before, None, moves))
            continue
        held: dict[str, list[TopicPartition]] = {}
        for member_id, tps in row.settled.items():
            held.setdefault(identities.get(member_id, member_id), []).extend(tps)
        members = []
        for m in spec.members:
            owned = tuple(held.get(identities.get(m.member_id, m.member_id), ()))
            members.append(
                replace(m, owned_partitions=owned, generation=generation if owned else None)
            )
        next_spec = replace(spec, members=tuple(members))
        moves = min_moves_to_balance(next_spec, before=row.settled, identities=identities)
        rows.append(_run(row.strategy, next_spec, row.settled, identities, moves))
    return WhatIf(spec, tuple(rows))


# --- rendering --------------------------------------------------------------------------------


def _label(member_id: str, labels: Mapping[str, str] | None) -> str:
    return labels.get(member_id, member_id) if labels else member_id


def format_partitions(tps: Iterable[TopicPartition]) -> str:
    """``Order 0,3,6 | Stock 2``: partitions grouped by topic, both sorted."""
    by_topic: dict[str, list[int]] = {}
    for tp in tps:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    if not by_topic:
        return "-"
    return " | ".join(
        f"{t} {','.join(str(p) for p in sorted(ps))}" for t, ps in sorted(by_topic.items())
    )


def _grid(header: Sequence[str], rows: Sequence[Sequence[str] | str], left: int = 1) -> list[str]:
    """Columns padded to width; the first ``left`` columns left-aligned, the rest right.

    A row given as one string (e.g. an error) is printed as is after the first ``left`` cells'
    width, and does not widen the columns.
    """
    cells = [header, *(r for r in rows if not isinstance(r, str))]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]

    def line(row: Sequence[str] | str) -> str:
        if isinstance(row, str):
            return row
        return "  ".join(
            c.ljust(w) if i < left else c.rjust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ).rstrip()

    return [line(header), *(line(r) for r in rows)]


LEGEND = (
    "moved/revoked/assigned: relative to the partitions owned before; min-moves: the fewest\n"
    "moves any balanced assignment needs ('+': a lower bound, as subscriptions differ)"
)


def render_table(
    whatif: WhatIf,
    *,
    labels: Mapping[str, str] | None = None,
    detail: bool = False,
    legend: bool = True,
) -> str:
    """A human-readable comparison: one summary line per strategy, then counts per member.

    ``labels`` maps member ids to display names; ``detail`` lists every member's partitions
    instead of the counts; ``legend`` explains the columns (:data:`LEGEND`).
    """
    spec = whatif.spec
    topics = ", ".join(f"{t}:{n}" for t, n in spec.topics.items())
    total = sum(spec.topics.values())
    lines = [f"{len(spec.members)} members, {total} partitions ({topics or 'no topics'})", ""]
    header = [
        "strategy", "side", "min", "max", "spread", "max/mean", "cv",
        "moved", "revoked", "assigned", "withheld", "balanced", "min-moves",
    ]  # fmt: skip
    width = max([len(header[0]), *(len(r.strategy) for r in whatif.rows)])
    rows: list[list[str] | str] = []
    for row in whatif.rows:
        if isinstance(row, StrategyFailure):
            rows.append(f"{row.strategy.ljust(width)}  {row.side:<6}  error: {row.error}")
            continue
        s, c = row.skew, row.churn
        rows.append(
            [
                row.strategy.ljust(width),
                row.side,
                str(s.min_partitions),
                str(s.max_partitions),
                str(s.spread_partitions),
                f"{s.imbalance_ratio:.2f}",
                f"{s.cv:.2f}",
                str(c.moved_partitions),
                str(c.revoked_partitions),
                str(c.assigned_partitions),
                str(len(row.withheld)),
                "yes" if row.balanced else "no",
                f"{row.min_moves_to_balance}{'' if row.min_moves_exact else '+'}",
            ]
        )
    lines += _grid(header, rows, left=2)

    outcomes = whatif.outcomes
    if outcomes and spec.members and not detail:
        lines += ["", "partitions per member (settled)"]
        member_rows = [
            [_label(m.member_id, labels), *(str(o.counts.get(m.member_id, 0)) for o in outcomes)]
            for m in spec.members
        ]
        lines += _grid(["member", *(o.strategy for o in outcomes)], member_rows)

    best = whatif.best_balanced_moves
    lines.append("")
    if best is None:
        lines.append("no strategy produced a balanced assignment")
    else:
        names = ", ".join(whatif.best_balanced_strategies)
        lines.append(f"fewest moves among balanced results: {best} ({names})")
    if detail:
        for o in outcomes:
            lines += ["", f"{o.strategy}:"]
            label_width = max((len(_label(m, labels)) for m in o.assignment), default=0)
            for member_id, tps in o.assignment.items():
                later = [tp for tp, owner in o.withheld.items() if owner == member_id]
                extra = f"   (+ {format_partitions(later)} next round)" if later else ""
                label = _label(member_id, labels).ljust(label_width)
                lines.append(f"  {label}  {format_partitions(tps)}{extra}")
            if o.churn.moved:
                lines.append(f"  moved: {format_partitions(o.churn.moved)}")
    if legend:
        lines += ["", LEGEND]
    return "\n".join(lines)


def _tps(tps: Iterable[TopicPartition]) -> list[list[Any]]:
    return [[tp.topic, tp.partition] for tp in tps]


def _row_json(row: WhatIfRow) -> dict[str, Any]:
    if isinstance(row, StrategyFailure):
        return {"strategy": row.strategy, "side": row.side, "error": row.error}
    c = row.churn
    return {
        "strategy": row.strategy,
        "side": row.side,
        "assignment": {m: _tps(tps) for m, tps in row.assignment.items()},
        "withheld": [[tp.topic, tp.partition, m] for tp, m in row.withheld.items()],
        "counts": row.counts,
        "balanced": row.balanced,
        "skew": asdict(row.skew),
        "churn": {
            "owned_before_partitions": c.owned_before_partitions,
            "moved_partitions": c.moved_partitions,
            "revoked_partitions": c.revoked_partitions,
            "assigned_partitions": c.assigned_partitions,
            "moved_fraction": c.moved_fraction,
            "moved": _tps(c.moved),
            "revoked": {m: _tps(tps) for m, tps in c.revoked.items()},
            "assigned": {m: _tps(tps) for m, tps in c.assigned.items()},
            "joined": list(c.joined),
            "left": list(c.left),
        },
        "min_moves_to_balance": row.min_moves_to_balance,
        "min_moves_exact": row.min_moves_exact,
    }


def to_json(whatif: WhatIf) -> dict[str, Any]:
    """The comparison as a JSON-ready object."""
    return {
        "members": [m.member_id for m in whatif.spec.members],
        "topics": dict(whatif.spec.topics),
        "strategies": [_row_json(r) for r in whatif.rows],
        "best_balanced": {
            "moved_partitions": whatif.best_balanced_moves,
            "strategies": list(whatif.best_balanced_strategies),
        },
    }


def render_json(whatif: WhatIf) -> str:
    """:func:`to_json` as indented JSON text."""
    return json.dumps(to_json(whatif), indent=2)
