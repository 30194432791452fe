"""The demo's live view (:class:`streaming.demo.Summary`) fed with real tracker rows (the golden
fixtures' replay), and :func:`streaming.console.waiting` on a terminal and off one."""

from __future__ import annotations

import io
import os
import pty
import re
import time
from collections import Counter
from typing import Any

import pytest
from rich.console import Console

from streaming.console import waiting
from streaming.demo import Summary

pytestmark = [pytest.mark.unit]


def _golden_rows() -> dict[str, list[dict[str, Any]]]:
    """Group id -> the rows the driver hands the demo (a rebalance as its summary)."""
    from streaming.tracking.events import RebalanceEvent, RebalanceSummary, to_row
    from tests.unit.streaming.tracking.test_golden import FIXTURES, load, run

    return {
        load(name)["group_id"]: [
            to_row(RebalanceSummary.of(e) if isinstance(e, RebalanceEvent) else e)
            for e in run(name)[1]
        ]
        for name in FIXTURES
    }


def _text(summary: Summary) -> str:
    out = io.StringIO()
    Console(file=out, width=200).print(summary.render(now_s=time.time(), header="h"))
    return out.getvalue()


def test_each_group_shows_its_rebalances_by_cause_and_one_line_each() -> None:
    rows = _golden_rows()
    summary = Summary()
    for group_rows in rows.values():
        summary.on_events(group_rows)
    text = _text(summary)
    lines = summary.take_lines()
    assert summary.take_lines() == []  # taken once
    for group, group_rows in rows.items():
        rebalances = [r for r in group_rows if r["kind"] == "rebalance_summary"]
        assert rebalances, group
        causes = Counter(
            r["cause"]
            for r in rebalances
            if r["generation_before"] is not None and r["is_rebalance"]
        )
        line = summary.groups.get(group)
        deleted = any(r["kind"] == "group_deleted" for r in group_rows)
        if deleted:  # a deleted group leaves the table and says so
            assert line is None and any(f"{group}  deleted" in x for x in lines)
            continue
        assert line is not None and line.causes == causes, group
        assert line.rebalances == causes.total()
        row = next(x for x in text.splitlines() if x.startswith(group))
        for cause, n in causes.items():
            assert f"{cause.replace('_', ' ')} {n}" in row, (group, row)
        assert sum(1 for x in lines if f"  {group}  " in x) == len(rebalances)
    assert "?" not in text


def test_a_group_only_in_snapshots_is_named_with_what_is_known_not_as_a_row() -> None:
    summary = Summary()
    summary.on_events(
        [{"kind": "group_status", "group_id": "idle", "state": "Empty", "member_count": 0}]
    )
    text = _text(summary)
    assert "waiting for the first rebalance" in text
    assert "only in the collector's snapshots so far: idle (Empty, 0 members)" in text
    assert not any(x.startswith("idle") for x in text.splitlines())
    assert summary.take_lines() == []  # no event to report


def test_waiting_off_a_terminal_is_one_line_or_nothing() -> None:
    out = io.StringIO()
    with waiting("starting Spark", stream=out) as step:
        step("first micro-batch")
    with waiting("stopping", stream=out, quiet_when_piped=True):
        pass
    assert out.getvalue() == "starting Spark…\n"


def test_waiting_on_a_terminal_shows_a_spinner_with_the_time_elapsed() -> None:
    master, slave = pty.openpty()
    try:
        with (
            open(slave, "w", encoding="utf-8", closefd=False) as tty,
            waiting("starting Spark", stream=tty) as step,
        ):
            time.sleep(0.3)
            step("first micro-batch")
            time.sleep(0.3)
        os.set_blocking(master, False)
        screen = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except BlockingIOError:
                break
            if not chunk:
                break
            screen += chunk
    finally:
        os.close(master)
        os.close(slave)
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", screen.decode("utf-8", "replace"))
    assert "starting Spark…" in plain and "first micro-batch…" in plain
    assert re.search(r"\d:\d\d:\d\d", plain)  # the elapsed time column
