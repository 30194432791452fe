"""What-if cost rules C1-C6 of ``streaming/tracking/cost.py``, as a commented table, and the
``group_metrics`` rows that carry them."""

from __future__ import annotations

import pytest

from streaming.tracking.cost import (
    pause_ms,
    paused_partition_seconds,
    paused_partitions_of,
    protocol_of,
)

pytestmark = pytest.mark.unit

COST_TABLE = [
    # rule, strategy, owned before, moved, withheld, is_rebalance, duration ms, paused, seconds
    # C1 not a rebalance (a metadata-only generation): nothing paused
    ("C1", "range", 12, 3, 0, False, 2_000, 0, 0.0),
    # C2/C3 eager (range, roundrobin, sticky): every partition owned before
    ("C3 eager", "range", 12, 3, 0, True, 2_000, 12, 24.0),
    ("C3 eager", "roundrobin", 12, 8, 0, True, 2_000, 12, 24.0),
    ("C3 eager", "sticky", 12, 4, 0, True, 2_000, 12, 24.0),
    # C2/C3 cooperative: only what moves
    ("C3 cooperative", "cooperative-sticky", 12, 4, 0, True, 2_000, 4, 8.0),
    # C3/C4 withheld partitions are paused too, and wait for the follow-up round: twice
    ("C3 follow-up", "cooperative-sticky", 12, 4, 2, True, 2_000, 6, 16.0),
    # C2 KIP-848 server assignors revoke incrementally
    ("C2 server", "uniform", 12, 3, 0, True, 2_000, 3, 6.0),
    ("C2 server", "server-range", 12, 5, 0, True, 2_000, 5, 10.0),
    # C4 edge: nothing owned before (the first generation) pauses nothing even when eager
    ("C4 first", "range", 0, 0, 0, True, 2_000, 0, 0.0),
    # C4 no measured duration: the partitions count, the seconds are 0
    ("C4 unmeasured", "range", 12, 3, 0, True, None, 12, 0.0),
    # C4 the sync phase stands in for an unmeasured duration (a lower bound)
    ("C4 sync phase", "range", 12, 3, 0, True, pause_ms(None, 500), 12, 6.0),
    ("C4 measured first", "range", 12, 3, 0, True, pause_ms(1_000, 500), 12, 12.0),
]


@pytest.mark.parametrize(
    ("rule", "strategy", "owned", "moved", "withheld", "is_rebalance", "ms", "paused", "seconds"),
    COST_TABLE,
)
def test_cost_table(
    rule: str,
    strategy: str,
    owned: int,
    moved: int,
    withheld: int,
    is_rebalance: bool,
    ms: int | None,
    paused: int,
    seconds: float,
) -> None:
    got = paused_partitions_of(
        protocol_of(strategy),
        owned_before=owned,
        moved=moved,
        withheld=withheld,
        is_rebalance=is_rebalance,
    )
    assert got == paused, rule
    extra = withheld if protocol_of(strategy) == "cooperative" else 0
    assert paused_partition_seconds(got, ms, extra_rounds=extra) == pytest.approx(seconds), rule
