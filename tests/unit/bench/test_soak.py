"""bench/soak.py's judgement: the growth line, flatness, the 30-day projection and the
targets; and its model of the live groups against the live commits it describes."""

from __future__ import annotations

import math
import time
from pathlib import Path
from types import ModuleType

import pytest

from tests.unit.bench.conftest import load_bench

pytestmark = pytest.mark.unit

HOUR = 3600.0


@pytest.fixture(scope="module")
def soak() -> ModuleType:
    return load_bench("soak")


def test_fit_recovers_a_line_and_its_relative_slope(soak: ModuleType) -> None:
    # 100 + 10 per hour, sampled every minute for an hour: mean 105, +9.52 % of it per hour
    points = [(m * 60.0, 100 + 10 * m / 60) for m in range(61)]
    f = soak.fit(points)
    assert f.slope_per_h == pytest.approx(10)
    assert f.mean == pytest.approx(105)
    assert f.pct_per_h == pytest.approx(100 * 10 / 105)
    assert f.points == 61 and f.span_h == pytest.approx(1)


def test_fit_needs_two_times_and_skips_missing_values(soak: ModuleType) -> None:
    assert soak.fit([(0.0, 1.0)]) is None
    assert soak.fit([(5.0, 1.0), (5.0, 2.0)]) is None
    f = soak.fit([(0.0, 1.0), (1800.0, math.nan), (3600.0, 3.0)])
    assert f.slope_per_h == pytest.approx(2) and f.points == 2


@pytest.mark.parametrize(
    ("per_h", "flat"),
    [
        (0.0, True),  # 1. constant
        (4.9, True),  # 2. just inside 5 % of the mean per hour
        (-4.9, True),  # 3. shrinking counts the same
        (5.2, False),  # 4. just outside
        (50.0, False),  # 5. growing without bound
    ],
)
def test_flat_is_within_five_percent_of_the_mean_per_hour(
    soak: ModuleType, per_h: float, flat: bool
) -> None:
    # a series around 100 whose line moves per_h per hour (its mean stays 100)
    points = [(t * 60.0, 100 + per_h * (t - 15) / 60) for t in range(31)]
    assert soak.is_flat(soak.fit(points)) is flat


def test_growth_judges_the_window_after_maintenance_only(soak: ModuleType) -> None:
    # files pile up for 20 minutes, compaction brings them down, then they stay flat
    series = [(m * 60.0, 1000.0 + 50 * m if m < 20 else 400.0) for m in range(61)]
    q = soak.Quantity("table.offset_commits.data_files", "files", "time", True)
    g = soak.growth(q, series, since_s=30 * 60, groups=2000)
    assert g.whole.slope_per_h < 0  # over the run: the compaction's drop dominates
    assert g.last.slope_per_h == pytest.approx(0)
    assert g.flat is True and g.target is True
    assert g.start == 1000 and g.end == 400
    # files grow with time, not with the groups: projected unscaled, and flat stays flat
    assert g.projected_30d_10k == pytest.approx(400)


def test_projection_scales_per_group_quantities_only(soak: ModuleType) -> None:
    # 1 GB after one hour, +100 MB an hour, at 2,000 groups
    by_groups = soak.project(1e9, 1e8, 1.0, scaling="groups", groups=2000)
    assert by_groups == pytest.approx((1e9 + 1e8 * (720 - 1)) * 5)
    by_time = soak.project(1e9, 1e8, 1.0, scaling="time", groups=2000)
    assert by_time == pytest.approx(1e9 + 1e8 * 719)
    assert soak.project(1e9, 1e8, 1.0, scaling="none", groups=2000) is None


def test_the_budget_target_holds_the_tables_to_2_gb_a_day_at_10000_groups(
    soak: ModuleType,
) -> None:
    def tables(per_h: float) -> list[dict[str, float]]:
        return [
            {"t_s": m * 60.0, "tables.bytes": 1e6 + per_h * m / 60, "checkpoint.bytes": 5e7}
            for m in range(61)
        ]

    # 2 GB a day at 10,000 groups is 400 MB a day, 16.7 MB an hour at 2,000
    for per_h, met in ((15e6, True), (18e6, False)):
        _, checks, since = soak.evaluate(
            tables(per_h), groups=2000, window_min=30, first_maintenance_s=None
        )
        assert since == 30 * 60
        [budget] = [v for v in checks if "30 days" in v.target and "on disk" in v.target]
        assert budget.met is met
        [live] = [v for v in checks if "30 days" in v.target and "live" in v.target]
        assert live.met is None  # no live bytes sampled
        [cp] = [v for v in checks if v.target.startswith("checkpoint.bytes")]
        assert cp.met is True  # constant


def test_the_window_starts_at_the_first_maintenance_if_later(soak: ModuleType) -> None:
    # memory grows until minute 40 (the first maintenance cycle, say at minute 45), then stays
    samples = [{"t_s": m * 60.0, "pss.jvm": 1e9 + min(m, 40) * 1e7} for m in range(61)]
    for first_maintenance_s, since, met in ((None, 30 * 60, False), (45 * 60, 45 * 60, True)):
        _, checks, got = soak.evaluate(
            samples, groups=2000, window_min=30, first_maintenance_s=first_maintenance_s
        )
        assert got == since
        [jvm] = [v for v in checks if v.target.startswith("pss.jvm")]
        assert jvm.met is met


def test_the_model_commits_what_the_live_writer_commits(soak: ModuleType, tmp_path: Path) -> None:
    live = load_bench("live")
    groups = live.plan_groups(12)
    schedule = tmp_path / "schedule.json"
    cluster = soak.LiveCluster(groups, schedule)
    now = int(time.time() * 1000)
    assert cluster.committed(groups[3].name, now) == {}  # no schedule: no commits yet
    soak.Schedule(now - 60_000, now + 60_000).write(schedule)
    cluster = soak.LiveCluster(groups, schedule)
    for g in groups:
        got = cluster.committed(g.name, now)
        rounds = (now - (now - 60_000) - g.phase_ms) // 5_000 + 1  # rounds due by now
        owned = zip(g.capture.owned, g.owned, strict=True)
        want = {tp: o.start + (rounds - 1) * o.step for tp, o in owned}
        assert {tp: v[0] for tp, v in got.items()} == want
        for (topic, p), offset in want.items():
            assert cluster.end_offset(topic, p, now) > offset
    # classic captures are described with their stable member; KIP-848 ones are not
    kinds = {cluster.listed()[i]["group_type"] for i in range(len(groups))}
    assert kinds == {"classic", "consumer"}


def test_each_table_folder_is_sampled_with_its_data_and_log_files_apart(
    soak: ModuleType, tmp_path: Path
) -> None:
    lag = tmp_path / "delta" / "partition_lag"
    (lag / "_delta_log").mkdir(parents=True)
    (lag / "date=2026-11-28").mkdir()
    (lag / "date=2026-11-28" / "part-0.parquet").write_bytes(b"p" * 100)
    (lag / "date=2026-11-28" / ".part-0.parquet.crc").write_bytes(b"c" * 3)
    (lag / "_delta_log" / "00000000000000000000.json").write_bytes(b"j" * 40)
    (lag / "_delta_log" / "00000000000000000000.crc").write_bytes(b"k" * 2)
    (tmp_path / "delta" / "new_table" / "_delta_log").mkdir(parents=True)  # appears later
    got = soak.delta_tables(tmp_path / "delta")
    unread = {"live_files": -1, "live_bytes": -1}  # not Delta logs: no latest version read
    assert got == {
        "new_table": {
            "bytes": 0, "data_files": 0, "data_bytes": 0, "log_files": 0, "log_bytes": 0, **unread
        },
        "partition_lag": {
            "bytes": 145,
            "data_files": 1,
            "data_bytes": 100,
            "log_files": 2,
            "log_bytes": 42,
            **unread,
        },
    }  # fmt: skip


def test_live_files_are_the_latest_versions_not_what_waits_on_disk(
    soak: ModuleType, tmp_path: Path
) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq
    from deltalake import write_deltalake

    table = tmp_path / "delta" / "group_lag"
    write_deltalake(str(table), pa.table({"g": ["a"] * 50}))
    write_deltalake(str(table), pa.table({"g": ["b"] * 70}), mode="append")
    write_deltalake(str(table), pa.table({"g": ["c"] * 90}), mode="overwrite")  # 2 removed
    got = soak.delta_tables(tmp_path / "delta")["group_lag"]
    [latest] = [p for p in table.glob("*.parquet") if pq.read_table(p)["g"][0].as_py() == "c"]
    assert got["data_files"] == 3
    assert (got["live_files"], got["live_bytes"]) == (1, latest.stat().st_size)


#: the head of ``jcmd PID VM.native_memory summary scale=KB`` from this JDK (17)
NMT_SUMMARY = """Native Memory Tracking:

(Omitting categories weighting less than 1KB)

Total: reserved=7842535KB, committed=484815KB
       malloc: 10143KB #61367
       mmap:   reserved=7832392KB, committed=474672KB

-                 Java Heap (reserved=6172672KB, committed=397312KB)
                            (mmap: reserved=6172672KB, committed=397312KB)

-                     Class (reserved=1048786KB, committed=1362KB)
                            (classes #1832)
                            (malloc=722KB #3127)
-                      Code (reserved=247883KB, committed=7743KB)
-    Native Memory Tracking (reserved=972KB, committed=972KB)
-        Shared class space (reserved=16384KB, committed=12060KB)
"""


def test_native_memory_reads_each_areas_committed_bytes(soak: ModuleType) -> None:
    got = soak.native_memory(NMT_SUMMARY)
    assert got == {
        "jvm.total": 484815 * 1024,
        "jvm.java_heap": 397312 * 1024,
        "jvm.class": 1362 * 1024,
        "jvm.code": 7743 * 1024,
        "jvm.native_memory_tracking": 972 * 1024,
        "jvm.shared_class_space": 12060 * 1024,
    }
    # a JVM without tracking answers with an error line, not a summary
    assert soak.native_memory("Native memory tracking is not enabled") == {}
    kinds = {q.key: q for q in soak.quantities([got])}
    assert kinds["jvm.java_heap"].unit == "bytes" and not kinds["jvm.java_heap"].flat_target


def test_tracked_jvm_keeps_the_jobs_own_options_for_its_heap(soak: ModuleType) -> None:
    (flag, value) = soak.tracked_jvm(["--conf", "spark.driver.memory=2g"])
    assert flag == "--conf" and value.startswith("spark.driver.extraJavaOptions=")
    assert "-XX:+UseSerialGC" in value and "-Xmn128m" in value
    assert value.endswith("-XX:NativeMemoryTracking=summary")
