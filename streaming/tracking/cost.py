"""What a rebalance cost, under the group's actual protocol and under every strategy (what-if).

One definition, used by the tracker's ``group_metrics`` rows (Delta), by the exporter's
``kafka_consumergroup_whatif_*_total`` counters (which sum those rows) and by
``rebalance-monitor audit advise`` (which sums them again from Delta), so the three agree.

Rules (``docs/tracking.md``, "What a rebalance cost"; proven in
``tests/unit/streaming/tracking/test_cost.py``):

C1. Only a rebalance (``is_rebalance``) costs anything; another event costs 0.
C2. A strategy's protocol: ``range``, ``roundrobin`` and ``sticky`` are *eager* (every member
    revokes everything before it joins); ``cooperative-sticky`` is *cooperative*; the
    KIP-848 server assignors ``uniform`` and ``server-range`` are *incremental* (the
    coordinator revokes only what moves), priced as cooperative.
C3. Paused partitions: eager pauses every partition owned before the rebalance
    (``churn.owned_before_partitions``); cooperative only the partitions that move
    (``churn.moved_partitions``) and those withheld for a follow-up round (revoked in the
    first round, assigned in the second; churn counts them as revoked, not moved). This is
    the listener contract: ``onPartitionsRevoked`` gets everything under eager, only the
    revoked partitions under cooperative.
C4. Paused partition-seconds = paused partitions x the rebalance's duration, the same for
    every strategy (the what-if changes what is paused, not how long the group takes to
    agree): ``duration_ms`` when measured (collector snapshots saw it start), else
    ``assignment_duration_ms`` (the sync phase, from the records alone: a lower bound),
    else 0 partition-seconds (the partitions still count in C3). :func:`pause_ms`. A
    withheld partition waits for both rounds: it counts twice (``extra_rounds``).
C5. The ``actual`` row pauses the partitions the rebalance really paused
    (``paused_partitions``: every partition owned before under eager, those the members
    lost under cooperative), for the same duration.
C6. A strategy *needs a follow-up round* when it withholds partitions (cooperative-sticky
    revoking before it can assign); the actual row says so when the group's assignor did.
"""

from __future__ import annotations

from typing import Literal

__all__ = [
    "EAGER_STRATEGIES",
    "StrategyProtocol",
    "pause_ms",
    "paused_partition_seconds",
    "paused_partitions_of",
    "protocol_of",
]

StrategyProtocol = Literal["eager", "cooperative"]
EAGER_STRATEGIES = frozenset({"range", "roundrobin", "sticky"})


def protocol_of(strategy: str) -> StrategyProtocol:
    """C2: how ``strategy`` revokes (an unknown client assignor is taken as eager)."""
    if strategy in ("cooperative-sticky", "uniform", "server-range"):
        return "cooperative"
    return "eager"


def paused_partitions_of(
    protocol: StrategyProtocol,
    *,
    owned_before: int,
    moved: int,
    withheld: int,
    is_rebalance: bool = True,
) -> int:
    """C1, C3: partitions a rebalance pauses under ``protocol``."""
    if not is_rebalance:
        return 0
    if protocol == "eager":
        return max(0, owned_before)
    return max(0, moved) + max(0, withheld)


def pause_ms(duration_ms: int | None, assignment_duration_ms: int | None) -> int | None:
    """C4: how long a rebalance paused what it paused: the measured duration, else the
    sync phase (a lower bound), else unknown."""
    return duration_ms if duration_ms is not None else assignment_duration_ms


def paused_partition_seconds(
    paused: int, duration_ms: int | None, *, extra_rounds: int = 0
) -> float:
    """C4: (paused partitions + the withheld ones again, ``extra_rounds``) x the duration,
    in seconds (0 when unknown)."""
    if duration_ms is None or duration_ms <= 0:
        return 0.0
    return (paused + max(0, extra_rounds)) * duration_ms / 1000.0
