"""The rules of :func:`streaming.spark.checkpoint.check_transactions`: the checkpoint's app id
and last batch against a table's Delta transactions (Spark's side:
``tests/spark/test_checkpoint.py``)."""

from __future__ import annotations

import pytest

from streaming.migration import derived_app_id
from streaming.spark.checkpoint import (
    CheckpointMismatchError,
    TableTransactions,
    check_transactions,
)

pytestmark = [pytest.mark.unit]

APP, OTHER = "rebalance-monitor:a", "rebalance-monitor:b"


@pytest.mark.parametrize(
    ("case", "versions", "last_batch", "outcome"),
    [
        # 1. new checkpoint, new tables: nothing to say
        (1, {}, -1, None),
        # 2. a restart: the tables are at the checkpoint's last batch (or before it)
        (2, {APP: 5}, 5, None),
        (3, {APP: 4}, 5, None),
        # 4. the tables are past the checkpoint under its own id: Delta would skip -> error
        (4, {APP: 6}, 5, "error"),
        (5, {APP: 0}, -1, "error"),
        # 6. a new checkpoint on tables another checkpoint of the job wrote: warning
        (6, {OTHER: 9}, -1, "warning"),
        # 7. another id below this checkpoint's batches, or a running checkpoint: silent
        (7, {APP: 3, OTHER: 9}, 3, None),
        # 8. a writer that is not the job (its own txnAppId): not ours to judge
        (8, {"someone-else": 9}, -1, None),
    ],
)
def test_the_transaction_rules(
    case: int, versions: dict[str, int], last_batch: int, outcome: str | None
) -> None:
    warnings: list[str] = []
    tables = [TableTransactions("offset_commits", versions)]
    if outcome == "error":
        with pytest.raises(CheckpointMismatchError, match="offset_commits"):
            check_transactions(tables, APP, last_batch, warnings.append)
        return
    check_transactions(tables, APP, last_batch, warnings.append)
    assert len(warnings) == (1 if outcome == "warning" else 0), case
    assert all(OTHER in w for w in warnings)


@pytest.mark.parametrize(
    ("checkpoint", "ran", "derived"),
    [
        ("hdfs://nn/rm/checkpoint", True, "rebalance-monitor:hdfs://nn/rm/checkpoint"),
        ("s3a://bucket/cp", True, "rebalance-monitor:s3a://bucket/cp"),
        ("hdfs://nn/rm/checkpoint", False, None),  # new: a fresh UUID
        ("file:///var/lib/rm/checkpoint", True, None),  # local paths always had the file
        ("/var/lib/rm/checkpoint", True, None),
    ],
)
def test_only_an_old_remote_checkpoint_keeps_the_derived_id(
    checkpoint: str, ran: bool, derived: str | None
) -> None:
    assert derived_app_id(checkpoint, ran) == derived
