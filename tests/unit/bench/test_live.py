"""bench/live.py's reading of the Spark floor's micro-batch lines."""

from __future__ import annotations

from types import ModuleType, SimpleNamespace

import pytest

pytestmark = pytest.mark.unit


def test_the_floor_s_batch_lines_are_read_back(live: ModuleType, spark_floor: ModuleType) -> None:
    lines = [
        (1.0, "started: the floor's query"),
        (2.0, spark_floor.batch_line(3, 8_000, 1_250)),
        (2.5, "some Spark warning"),
        (3.0, spark_floor.batch_line(4, 0, -2)),
    ]
    got = live.floor_batches(SimpleNamespace(lines=lines))
    assert [(b.at, b.batch, b.records, b.oldest_ms) for b in got] == [
        (2.0, 3, 8_000, 1_250),
        (3.0, 4, 0, -2),
    ]


def test_the_floor_s_cores_are_its_cpu_over_its_wall_time(live: ModuleType) -> None:
    run = live.FloorRun(
        seconds=200.0,
        records=1_600_000,
        cpu={"jvm": 80.0, "driver": 10.0},
        kept_up=True,
        batches=[],
        memory=live.stream.Memory(),
    )
    assert run.cpu_s == 90.0
    assert run.cores == pytest.approx(0.45)
