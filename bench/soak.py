"""Soak: the live steady workload with the collector, for an hour, sampled every minute.

What a platform team runs for months, compressed: ``bench/live.py``'s workload (its broker,
prelude, paced producer, ``--groups`` groups committing 20 partitions every 5 s, the job as
``rebalance-monitor run`` with a 1 s trigger, its detection latency trials) **with a
collector publishing membership events**, for ``--duration-min`` (default 60) minutes.

The collector is its own process (``python bench/soak.py collect``): the real
:class:`~streaming.collector.Collector` (its loop, change detection, producer and the
membership topic it creates) whose admin client answers the group calls from a model of the
live groups (:class:`LiveCluster`: the capture's stable member and assignment of each group,
the offsets the live commits have reached, end offsets just ahead of them) and everything
else from the broker. The broker's own coordinator does not know the groups: their records
are written to ``__consumer_offsets`` directly (``bench/steady.py``), so a collector asking
the broker would find none of them, and ``partition_lag`` would stay empty.

Every ``--sample-every-s`` (default 60 s) one sample, a JSON line in ``samples.jsonl`` under
``--out`` (default ``.local/bench-soak-out``) and a progress line on stderr: per Delta table
(every folder under the job's Delta path, so new tables are sampled as they appear) its
bytes, data files and ``_delta_log`` files; the streaming checkpoint's bytes (and its state
stores' part) and files; each process's memory as PSS (job driver Python, JVM, Python
workers, collector, broker, and the bench's producer); the cores each of the job's processes
and the collector kept busy over the minute (``cpu.*``, CPU seconds a second); the
micro-batch durations of the minute (p50 / p95 of the job's ``[events] batch N: ... in X s``
lines, and of its Delta part); the job's input rate against the produce rate; the detection
latency trials seen in the minute; the job's lines matching ``--maintenance-pattern``
(maintenance cycles, once the job runs them).

At the end (``report.md``, ``summary.json``, ``samples.csv``): each quantity's growth per hour
(a least-squares line over the run and over the last ``--flat-window-min`` minutes, from the
first maintenance cycle on), its 30-day projection at 10,000 groups (quantities that grow
with the groups scaled by 10,000 / ``--groups``), and the targets: files per table,
checkpoint bytes, memory and batch duration flat (within 5 % per hour over the window); all
tables' 30-day projection within 2 GB a day. The job's, the collector's and the producer's
logs are copied under ``--out`` too. With ``--jvm-native-memory`` the JVM runs with Native
Memory Tracking and each sample holds its areas' committed bytes (``jvm.*``) and its RSS.

Run it::

    make bench-soak                                          # 2,000 groups, 60 min
    make bench-soak ARGS="--groups 10000 --duration-min 20"
    nice -n 5 .venv/bin/python bench/soak.py --groups 300 --duration-min 8 \\
        --job-arg=--conf --job-arg=spark.driver.memory=1g
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import csv
import json
import logging
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

import live  # noqa: E402  (bench/live.py: the live workload, trials, producer)
import steady  # noqa: E402  (bench/steady.py: captures, broker, offsets topic)
import stream  # noqa: E402  (bench/stream.py: the job runner, /proc readers)

STATE = REPO / ".local" / "bench-soak"
OUT = REPO / ".local" / "bench-soak-out"
MEMBERSHIP_TOPIC = "soak.membership"
REFERENCE_GROUPS = 10_000
DAYS = 30
BUDGET_DAY_BYTES = 2e9  # all tables, a day, at 10,000 groups (issue 29, item 1)
FLAT_PCT_PER_H = 5.0
DEFAULT_MAINTENANCE = r"(?i)\b(maintenance|maintain|optimize|vacuum|compact(ed|ion)?)\b"

_EVENTS_LINE = re.compile(
    r"\[events\] batch (\d+): .* in ([\d.]+) s \(read, decode, track ([\d.]+) s, "
    r"exporter ([\d.]+) s, Delta ([\d.]+) s\)"
)


# -- pure: growth, flatness, projection -----------------------------------------------------


@dataclass(frozen=True)
class Fit:
    """A least-squares line through (hours, value) points: its slope per hour, the mean of
    the values, and the slope as a percentage of that mean."""

    slope_per_h: float
    mean: float
    points: int
    span_h: float

    @property
    def pct_per_h(self) -> float:
        if self.mean == 0:
            return 0.0 if self.slope_per_h == 0 else math.inf
        return 100 * self.slope_per_h / abs(self.mean)


def fit(points: Sequence[tuple[float, float]]) -> Fit | None:
    """The line through ``(t_s, value)`` points (seconds); None for fewer than two distinct
    times or any value missing (NaN)."""
    pts = [(t / 3600, v) for t, v in points if not math.isnan(v)]
    if len(pts) < 2:
        return None
    n = len(pts)
    mt = sum(t for t, _ in pts) / n
    mv = sum(v for _, v in pts) / n
    var = sum((t - mt) ** 2 for t, _ in pts)
    if var == 0:
        return None
    slope = sum((t - mt) * (v - mv) for t, v in pts) / var
    return Fit(slope, mv, n, pts[-1][0] - pts[0][0])


def window(points: Sequence[tuple[float, float]], since_s: float) -> list[tuple[float, float]]:
    return [(t, v) for t, v in points if t >= since_s]


def is_flat(f: Fit | None, pct_per_h: float = FLAT_PCT_PER_H) -> bool | None:
    """Within ``pct_per_h`` of its mean per hour (None: no line to judge)."""
    return None if f is None else abs(f.pct_per_h) <= pct_per_h


Scaling = Literal["groups", "time", "none"]


def project(
    end: float,
    slope_per_h: float,
    elapsed_h: float,
    *,
    scaling: Scaling,
    groups: int,
    days: float = DAYS,
    reference_groups: int = REFERENCE_GROUPS,
) -> float | None:
    """The value after ``days`` at ``reference_groups``, continuing the line from ``end``
    (reached after ``elapsed_h``): a quantity that grows with the groups (``"groups"``:
    bytes, rows, state) is scaled by ``reference_groups / groups``; one that grows with time
    alone (``"time"``: files, one or a few per micro-batch) is not; ``"none"``: no projection
    (memory, durations)."""
    if scaling == "none":
        return None
    value = end + slope_per_h * max(0.0, days * 24 - elapsed_h)
    return value * (reference_groups / groups if scaling == "groups" else 1.0)


@dataclass(frozen=True)
class Quantity:
    """How one sampled series is judged: its unit, how it projects, whether it must be flat."""

    key: str
    unit: Literal["bytes", "files", "s", "ms", "records/s", "records", "cores"]
    scaling: Scaling
    flat_target: bool


@dataclass(frozen=True)
class Growth:
    key: str
    unit: str
    start: float
    end: float
    whole: Fit | None
    last: Fit | None
    projected_30d_10k: float | None
    target: bool  # must be flat
    flat: bool | None  # None: no line to judge


def growth(
    q: Quantity,
    series: Sequence[tuple[float, float]],
    *,
    since_s: float,
    groups: int,
) -> Growth:
    """``q``'s growth over the whole ``series`` and from ``since_s`` on; projected from the
    latter (the steady state), flat judged on it."""
    values = [v for _, v in series if not math.isnan(v)]
    whole = fit(series)
    last = fit(window(series, since_s))
    elapsed_h = series[-1][0] / 3600 if series else 0.0
    slope = last.slope_per_h if last is not None else whole.slope_per_h if whole else 0.0
    end = values[-1] if values else math.nan
    return Growth(
        q.key,
        q.unit,
        values[0] if values else math.nan,
        end,
        whole,
        last,
        project(end, slope, elapsed_h, scaling=q.scaling, groups=groups),
        q.flat_target,
        is_flat(last),
    )


def quantities(samples: Sequence[Mapping[str, Any]]) -> list[Quantity]:
    """The series the samples hold, each judged as its kind says."""
    keys: dict[str, None] = {}
    for s in samples:
        keys.update(dict.fromkeys(k for k, v in s.items() if isinstance(v, int | float)))
    out = []
    for k in keys:
        if k.startswith("table.") and k.endswith((".bytes", ".data_bytes", ".live_bytes")):
            out.append(Quantity(k, "bytes", "groups", False))
        elif k.startswith("table.") and k.endswith(".log_bytes"):
            out.append(Quantity(k, "bytes", "time", False))
        elif k.startswith("table.") and k.endswith("_files"):
            out.append(Quantity(k, "files", "time", True))
        elif k in ("tables.bytes", "tables.live_bytes"):
            out.append(Quantity(k, "bytes", "groups", False))
        elif k == "checkpoint.bytes":
            out.append(Quantity(k, "bytes", "groups", True))
        elif k == "checkpoint.state_bytes":
            out.append(Quantity(k, "bytes", "groups", False))
        elif k == "checkpoint.files":
            out.append(Quantity(k, "files", "time", False))
        elif k.startswith("cpu."):
            out.append(Quantity(k, "cores", "none", False))
        elif k.startswith("jvm."):
            out.append(Quantity(k, "bytes", "none", False))
        elif k.startswith("pss."):
            mine = k.split(".", 1)[1] in ("jvm", "driver", "workers", "collector")
            out.append(Quantity(k, "bytes", "none", mine))
        elif k in ("batch.p50_s", "batch.p95_s"):
            out.append(Quantity(k, "s", "none", True))
        elif k.startswith("batch.") and k.endswith("_s"):
            out.append(Quantity(k, "s", "none", False))
        elif k.startswith("trials.") and k.endswith("_ms"):
            out.append(Quantity(k, "ms", "none", False))
        elif k.endswith("_rate"):
            out.append(Quantity(k, "records/s", "none", False))
        elif k == "job_behind_records":
            out.append(Quantity(k, "records", "none", False))
    return out


@dataclass(frozen=True)
class Verdict:
    target: str
    value: str
    met: bool | None


def verdicts(growths: Sequence[Growth], groups: int) -> list[Verdict]:
    """The issue's targets: every flat-target series flat; all tables' 30-day projection at
    10,000 groups within the budget."""
    out = []
    for g in growths:
        if not g.target:
            continue
        pct = "no line" if g.last is None else f"{g.last.pct_per_h:+.1f} %/h"
        out.append(Verdict(f"{g.key} flat (±{FLAT_PCT_PER_H:g} %/h)", pct, g.flat))
    budget = BUDGET_DAY_BYTES * DAYS
    for key, what in (("tables.bytes", "on disk"), ("tables.live_bytes", "live")):
        total = next((g for g in growths if g.key == key), None)
        target = f"all tables in 30 days at {REFERENCE_GROUPS:,} groups, {what}, <= {_size(budget)}"
        if total is not None and total.projected_30d_10k is not None:
            out.append(
                Verdict(target, _size(total.projected_30d_10k), total.projected_30d_10k <= budget)
            )
        else:
            out.append(Verdict(target, "no data", None))
    return out


# -- formatting -------------------------------------------------------------------------------


def _size(n: float) -> str:
    if math.isnan(n):
        return "—"
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:,.2f} {unit}"
    return f"{n:,.0f} B"


def _fmt(value: float | None, unit: str) -> str:
    if value is None or math.isnan(value):
        return "—"
    if unit == "bytes":
        return _size(value)
    if unit == "s":
        return f"{value:.2f} s"
    if unit == "ms":
        return f"{value:,.0f} ms"
    if unit == "cores":
        return f"{value:.3f} cores"
    return f"{value:,.0f}"


#: Series the markdown table leaves out (kept in ``samples.csv`` and ``summary.json``).
_DETAIL = (".data_bytes", ".log_bytes")


def markdown(growths: Sequence[Growth], checks: Sequence[Verdict], since_s: float) -> str:
    lines = [
        f"| quantity | start | end | per hour (run) | per hour (from {since_s / 60:.0f} min) "
        f"| %/h (from {since_s / 60:.0f} min) | 30 days at {REFERENCE_GROUPS:,} groups "
        "| flat target |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for g in growths:
        if g.key.endswith(_DETAIL):
            continue
        per_h = "—" if g.whole is None else _fmt(g.whole.slope_per_h, g.unit)
        last = "—" if g.last is None else _fmt(g.last.slope_per_h, g.unit)
        pct = "—" if g.last is None else f"{g.last.pct_per_h:+.1f}"
        flat = "" if not g.target else "n/a" if g.flat is None else "met" if g.flat else "**no**"
        lines.append(
            f"| {g.key} | {_fmt(g.start, g.unit)} | {_fmt(g.end, g.unit)} | {per_h} | {last} "
            f"| {pct} | {_fmt(g.projected_30d_10k, g.unit)} | {flat} |"
        )
    lines += ["", "| target | value | met |", "|---|---|---|"]
    for v in checks:
        met = "n/a" if v.met is None else ("yes" if v.met else "**no**")
        lines.append(f"| {v.target} | {v.value} | {met} |")
    return "\n".join(lines)


# -- the collector's model of the live groups --------------------------------------------------


@dataclass(frozen=True)
class Schedule:
    """When the live commits run (Unix ms); the collector reads it from a file the bench
    writes once the live phase is planned (no file yet: no commits yet)."""

    start_ms: int
    end_ms: int

    @staticmethod
    def read(path: Path) -> Schedule | None:
        with contextlib.suppress(OSError, ValueError, KeyError):
            doc = json.loads(path.read_text())
            return Schedule(int(doc["start_ms"]), int(doc["end_ms"]))
        return None

    def write(self, path: Path) -> None:
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(self)))
        tmp.replace(path)


class LiveCluster:
    """The live groups as the admin API would describe them: each group ``Stable`` with its
    capture's stable member and assignment (classic groups) or as a KIP-848 group; its
    committed offsets those of the last round of commits due (:func:`live.commits`'s
    offsets); each partition's end offset a round ahead of every group committing it."""

    def __init__(self, groups: Sequence[live.Group], schedule_path: Path) -> None:
        from streaming.codec.decode import decode_record
        from streaming.codec.model import ConsumerGroupMemberMetadata, GroupMetadata

        self.groups = list(groups)
        self.by_name = {g.name: g for g in self.groups}
        self.schedule_path = schedule_path
        self._schedule: Schedule | None = None
        self.members: dict[str, dict[str, Any]] = {}  # capture -> its member, as described
        self.kinds: dict[str, tuple[str, str | None]] = {}  # capture -> group type, protocol
        self.topic_ids: dict[str, str] = {}
        self.partitions: dict[str, int] = {}
        self.heads: dict[tuple[str, int], tuple[int, int]] = {}  # max start, max step
        for g in self.groups:
            c = g.capture
            for topic, raw in c.topic_ids.items():
                self.topic_ids[topic] = base64.urlsafe_b64encode(raw).decode().rstrip("=")
            for (topic, partition), o in zip(c.owned, g.owned, strict=True):
                self.partitions[topic] = max(self.partitions.get(topic, 0), partition + 1)
                start, step = self.heads.get((topic, partition), (0, 0))
                self.heads[topic, partition] = (max(start, o.start), max(step, o.step))
            if c.name in self.kinds:
                continue
            records = [decode_record(k, v) for _, k, v in c.rebalance]
            metadata = [r for r in records if isinstance(r, GroupMetadata)]
            if metadata:
                gm = metadata[-1]
                [m] = gm.members
                assigned: dict[str, list[int]] = {}
                for topic, p in c.assigned:
                    assigned.setdefault(topic, []).append(p)
                self.kinds[c.name] = ("classic", gm.protocol)
                self.members[c.name] = {
                    "member_id": m.member_id,
                    "group_instance_id": m.group_instance_id,
                    "client_id": m.client_id,
                    "client_host": m.client_host,
                    "member_metadata": {
                        "topics": list(m.subscription.topics) if m.subscription else []
                    },
                    "member_assignment": {
                        "assigned_partitions": [
                            {"topic": t, "partitions": ps} for t, ps in sorted(assigned.items())
                        ]
                    },
                }
            elif any(isinstance(r, ConsumerGroupMemberMetadata) for r in records):
                self.kinds[c.name] = ("consumer", None)
            else:
                raise SystemExit(f"capture {c.name}: no group metadata to describe it by")

    def _rounds(self, now_ms: int, phase_ms: int) -> int:
        """The number of commit rounds due by ``now_ms`` for a group of phase ``phase_ms``."""
        if self._schedule is None:
            self._schedule = Schedule.read(self.schedule_path)
        s = self._schedule
        if s is None or now_ms < s.start_ms + phase_ms:
            return 0
        due = (now_ms - s.start_ms - phase_ms) // steady.COMMIT_INTERVAL_MS + 1
        last = -(-(s.end_ms - s.start_ms - phase_ms) // steady.COMMIT_INTERVAL_MS)
        return int(max(0, min(due, last)))

    def listed(self) -> list[dict[str, Any]]:
        return [
            {
                "group_id": g.name,
                "group_state": "Stable",
                "group_type": self.kinds[g.capture.name][0],
                "protocol_type": "consumer",
            }
            for g in self.groups
        ]

    def describe(self, group_id: str) -> dict[str, Any]:
        g = self.by_name[group_id]
        return {
            "group_id": group_id,
            "group_state": "Stable",
            "protocol_type": "consumer",
            "protocol_data": self.kinds[g.capture.name][1] or "",
            "error": None,
            "members": [self.members[g.capture.name]],
        }

    def committed(self, group_id: str, now_ms: int) -> dict[tuple[str, int], tuple[int, str, int]]:
        g = self.by_name[group_id]
        rounds = self._rounds(now_ms, g.phase_ms)
        if rounds == 0:
            return {}
        return {
            tp: (o.start + (rounds - 1) * o.step, "", 0)
            for tp, o in zip(g.capture.owned, g.owned, strict=True)
        }

    def end_offset(self, topic: str, partition: int, now_ms: int) -> int:
        start, step = self.heads[topic, partition]
        return start + (self._rounds(now_ms, 0) + 1) * step

    def topic(self, name: str) -> dict[str, Any]:
        return {
            "name": name,
            "error_code": 0,
            "is_internal": False,
            "topic_id": self.topic_ids[name],
            "partitions": [
                {
                    "partition_index": p,
                    "leader_id": 1,
                    "replica_nodes": [1],
                    "isr_nodes": [1],
                    "offline_replicas": [],
                }
                for p in range(self.partitions[name])
            ],
        }


class LiveAdmin:
    """A ``KafkaAdminClient`` whose group, group-config and end-offset answers (and those
    for the groups' topics) come from :class:`LiveCluster`; every other call (the cluster,
    the membership topic: its creation and config check) goes to the broker."""

    def __init__(self, cluster: LiveCluster, real: Any) -> None:
        self._cluster = cluster
        self._real = real

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    @staticmethod
    def _now_ms() -> int:
        return int(time.time() * 1000)

    def list_groups(self, *args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        return self._cluster.listed()

    def describe_groups(self, group_ids: Iterable[str], *args: Any, **kw: Any) -> dict[str, Any]:
        return {g: self._cluster.describe(g) for g in group_ids}

    def list_group_offsets(self, group_ids: Iterable[str], *args: Any, **kw: Any) -> Any:
        now = self._now_ms()
        return {g: self._cluster.committed(g, now) for g in group_ids}

    def describe_configs(self, resources: Sequence[Any], *args: Any, **kwargs: Any) -> Any:
        from kafka.admin import ConfigResourceType

        from streaming.collector.admin import SESSION_TIMEOUT_CONFIG

        if resources and all(r.resource_type == ConfigResourceType.GROUP for r in resources):
            value = {SESSION_TIMEOUT_CONFIG: {"value": "45000"}}
            return {"group": {r.name: value for r in resources}}
        return self._real.describe_configs(resources, *args, **kwargs)

    def list_topics(self, *args: Any, **kwargs: Any) -> list[str]:
        return sorted(self._cluster.partitions)

    def describe_topics(self, topics: Sequence[str] | None = None, *args: Any, **kw: Any) -> Any:
        names = list(topics or ())
        mine = [t for t in names if t in self._cluster.partitions]
        others = [t for t in names if t not in self._cluster.partitions]
        real = list(self._real.describe_topics(others, *args, **kw)) if others else []
        return [self._cluster.topic(t) for t in mine] + real

    def list_partition_offsets(self, request: Mapping[Any, Any], *args: Any, **kw: Any) -> Any:
        now = self._now_ms()

        @dataclass(frozen=True)
        class Offset:
            offset: int

        return {tp: Offset(self._cluster.end_offset(tp[0], tp[1], now)) for tp in request}


def collector_main(argv: Sequence[str]) -> int:
    """``bench/soak.py collect``: the collector over :class:`LiveAdmin` until SIGTERM."""
    from kafka import KafkaAdminClient

    from streaming.collector import Collector
    from streaming.config import CollectorConfig

    parser = argparse.ArgumentParser(prog="soak.py collect")
    parser.add_argument("--bootstrap-server", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--groups", type=int, required=True)
    parser.add_argument("--schedule", type=Path, required=True)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stdout)
    cluster = LiveCluster(live.plan_groups(args.groups), args.schedule)
    config = CollectorConfig(bootstrap_servers=args.bootstrap_server, topic=args.topic)
    collector = Collector(
        config,
        admin_factory=lambda c: LiveAdmin(cluster, KafkaAdminClient(**c.admin_configs())),
    )
    halt = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: halt.set())
    signal.signal(signal.SIGINT, lambda *_: halt.set())
    collector.run(stop=halt)
    return 0


class CollectorProcess:
    """``bench/soak.py collect`` as its own process; its log lines counted as they come."""

    def __init__(self, bootstrap: str, groups: int, schedule: Path, log: Path) -> None:
        cmd = [sys.executable, __file__, "collect", "--bootstrap-server", bootstrap]
        cmd += ["--topic", MEMBERSHIP_TOPIC, "--groups", str(groups), "--schedule", str(schedule)]
        self.log = log
        self.snapshots = 0
        self.events = 0
        self.proc = subprocess.Popen(
            cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        with self.log.open("w") as out:
            for line in self.proc.stdout:
                out.write(line)
                out.flush()
                if m := re.search(r"snapshot (\d+): .*\[totals: (\d+) events", line):
                    self.snapshots, self.events = int(m[1]), int(m[2])

    def check_alive(self) -> None:
        if self.proc.poll() is not None:
            tail = self.log.read_text(errors="replace")[-2000:]
            raise SystemExit(f"the collector exited with {self.proc.returncode}: {tail}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._reader.join(timeout=5)


def create_membership_topic(bootstrap: str) -> None:
    """The membership topic as the collector creates it (compacted, zstd: its settings)."""
    from kafka import KafkaAdminClient

    from streaming.collector.topic import TOPIC_CONFIGS

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics(
            {MEMBERSHIP_TOPIC: {"num_partitions": 1, "replication_factor": 1,
                                "configs": dict(TOPIC_CONFIGS)}}
        )  # fmt: skip
    finally:
        admin.close()


# -- sampling -------------------------------------------------------------------------------


def tree_stats(path: Path) -> tuple[int, int]:
    """(files, bytes) under ``path`` (files vanishing while walked are skipped)."""
    files = size = 0
    for root, _dirs, names in os.walk(path):
        for name in names:
            with contextlib.suppress(OSError):
                size += os.stat(os.path.join(root, name)).st_size
                files += 1
    return files, size


def live_files(table: Path) -> tuple[int, int]:
    """(files, bytes) of the table's latest version, as its log lists them (``deltalake``):
    what a reader of the table reads, without the files compaction replaced and the log
    versions that wait for their retention to end (on disk until then)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    from deltalake import DeltaTable

    try:
        actions = pa.table(DeltaTable(str(table)).get_add_actions(flatten=True))
    except Exception:  # no commit yet, or a log being written: no sample this time
        return -1, -1
    return actions.num_rows, int(pc.sum(actions.column("size_bytes")).as_py() or 0)


def delta_tables(delta: Path) -> dict[str, dict[str, int]]:
    """Per table folder under ``delta``: its bytes, its data files (Parquet outside
    ``_delta_log``) and their bytes, its ``_delta_log`` files and their bytes, and its
    latest version's files and bytes (:func:`live_files`; -1 when it could not be read)."""
    out: dict[str, dict[str, int]] = {}
    if not delta.is_dir():
        return out
    for table in sorted(p for p in delta.iterdir() if p.is_dir()):
        log_files, log_bytes = tree_stats(table / "_delta_log")
        data_files = data_bytes = other = 0
        for root, dirs, names in os.walk(table):
            dirs[:] = [d for d in dirs if d != "_delta_log"]
            for name in names:
                with contextlib.suppress(OSError):
                    n = os.stat(os.path.join(root, name)).st_size
                    if name.endswith(".parquet"):
                        data_files, data_bytes = data_files + 1, data_bytes + n
                    else:
                        other += n
        out[table.name] = {
            "bytes": data_bytes + other + log_bytes,
            "data_files": data_files,
            "data_bytes": data_bytes,
            "log_files": log_files,
            "log_bytes": log_bytes,
        }
        out[table.name]["live_files"], out[table.name]["live_bytes"] = live_files(table)
    return out


def processes(job_pid: int) -> dict[str, list[int]]:
    """The job's processes by kind: its driver Python, JVM and Python workers."""
    out: dict[str, list[int]] = {"driver": [job_pid], "jvm": [], "workers": []}
    stack = stream._children(job_pid)
    while stack:
        pid = stack.pop()
        kind = "jvm" if "java" in stream._cmdline(pid).split(" ", 1)[0] else "workers"
        out[kind].append(pid)
        stack += stream._children(pid)
    return out


def pss(pids: Iterable[int]) -> int:
    return sum(stream._pss_kib(pid) for pid in pids) * 1024


_NMT_TOTAL = re.compile(r"^Total: reserved=(\d+)KB, committed=(\d+)KB", re.MULTILINE)
_NMT_AREA = re.compile(r"^-\s+(.+?) \(reserved=(\d+)KB, committed=(\d+)KB", re.MULTILINE)


def native_memory(summary: str) -> dict[str, int]:
    """The committed bytes of each area of a JVM's Native Memory Tracking summary (``jcmd
    PID VM.native_memory summary scale=KB``), keyed ``jvm.<area>`` (``jvm.java_heap``,
    ``jvm.class``, ...) and ``jvm.total``; memory the JVM's native libraries allocate
    themselves (RocksDB's) is in none of them."""
    out: dict[str, int] = {}
    if m := _NMT_TOTAL.search(summary):
        out["jvm.total"] = int(m[2]) * 1024
    for m in _NMT_AREA.finditer(summary):
        out["jvm." + re.sub(r"\W+", "_", m[1].strip().lower())] = int(m[3]) * 1024
    return out


def tracked_jvm(job_args: Sequence[str]) -> list[str]:
    """The job arguments that run its JVM with the options the job gives it for its heap,
    and Native Memory Tracking."""
    from streaming.spark.session import DEFAULT_CONF, local_jvm_conf

    memory = DEFAULT_CONF["spark.driver.memory"]
    for arg in job_args:
        if arg.startswith("spark.driver.memory="):
            memory = arg.split("=", 1)[1]
    options = local_jvm_conf(memory)["spark.driver.extraJavaOptions"]
    return ["--conf", f"spark.driver.extraJavaOptions={options} -XX:NativeMemoryTracking=summary"]


def jvm_native_memory(pids: Sequence[int]) -> dict[str, int]:
    """:func:`native_memory` of the job's JVM, empty when it does not track (it runs
    without ``-XX:NativeMemoryTracking``) or ``jcmd`` does not answer."""
    if len(pids) != 1:
        return {}
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        done = subprocess.run(
            ["jcmd", str(pids[0]), "VM.native_memory", "summary", "scale=KB"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        out = native_memory(done.stdout)
        if out:  # beside the areas, what is resident: RocksDB's own memory is the difference
            status = Path(f"/proc/{pids[0]}/status").read_text()
            if m := re.search(r"^VmRSS:\s+(\d+) kB", status, re.MULTILINE):
                out["jvm.rss"] = int(m[1]) * 1024
        return out
    return {}


def _broker_pid(folder: Path) -> int | None:
    with contextlib.suppress(OSError, ValueError):
        return int((folder / "kafka.pid").read_text().split()[0])
    return None


def quantile(values: Sequence[float], q: float) -> float:
    return live._p(values, q)


class Sampler:
    """One sample a minute: what it reads since the previous one (job lines, producer
    progress, trials) and what it measures now (folders, memory)."""

    def __init__(
        self,
        *,
        job: stream.JobProcess,
        producer: live.PacedProducer,
        collector: CollectorProcess,
        writer: live.Writer,
        broker_folder: Path,
        maintenance: re.Pattern[str],
        started: float,
        out: Path,
        native_memory: bool = False,
    ) -> None:
        self.job, self.producer, self.collector, self.writer = job, producer, collector, writer
        self.broker_folder = broker_folder
        self.maintenance = maintenance
        self.started = started  # perf_counter at the live start
        self.out = out
        self.native_memory = native_memory
        self.samples: list[dict[str, Any]] = []
        self.maintenance_lines: list[tuple[float, str]] = []
        self._line = 0
        self._last_at = started
        self._last_read = live.job_total(job)
        self._last_acked = self._acked()
        self._last_events = collector.events
        self._last_cpu = self._cpu()

    def _cpu(self) -> dict[str, float]:
        """CPU seconds so far of the job's processes by kind, and of the collector."""
        out = stream.cpu_seconds(self.job.proc.pid)
        out["collector"] = stream.cpu_seconds(self.collector.proc.pid)["driver"]
        return out

    def _acked(self) -> int:
        progress = self.producer.stats.progress
        return progress[-1][1] if progress else 0

    def sample(self) -> dict[str, Any]:
        now = time.perf_counter()
        t_s = now - self.started
        minute = max(now - self._last_at, 1e-9)
        durations: list[float] = []
        delta_s: list[float] = []
        lines = self.job.lines
        while self._line < len(lines):
            at, line = lines[self._line]
            self._line += 1
            if m := _EVENTS_LINE.match(line):
                durations.append(float(m[2]))
                delta_s.append(float(m[5]))
            elif self.maintenance.search(line):
                self.maintenance_lines.append((at - self.started, line))
        read = live.job_total(self.job)
        acked = self._acked()
        events = self.collector.events
        lat = [
            float(t.latency_ms)
            for t in self.writer.trials
            if t.latency_ms is not None
            and t.seen_ms is not None
            and self._last_at <= self._perf_of(t.seen_ms) < now
        ]
        procs = processes(self.job.proc.pid)
        cpu = self._cpu()
        busy = {k: (cpu[k] - self._last_cpu.get(k, 0.0)) / minute for k in cpu}
        broker = _broker_pid(self.broker_folder)
        s: dict[str, Any] = {
            "t_s": round(t_s, 1),
            "unix_s": round(time.time(), 1),
            "batch.count": len(durations),
            "batch.p50_s": quantile(durations, 0.5),
            "batch.p95_s": quantile(durations, 0.95),
            "batch.delta_p50_s": quantile(delta_s, 0.5),
            "batch.delta_p95_s": quantile(delta_s, 0.95),
            "input_rate": (read - self._last_read) / minute,
            "produce_rate": (acked - self._last_acked + events - self._last_events) / minute,
            # produced (the producer's acks, the collector's events) and not read yet
            "job_behind_records": acked + events - read,
            "trials.count": len(lat),
            "trials.p50_ms": quantile(lat, 0.5),
            "trials.p95_ms": quantile(lat, 0.95),
            "maintenance_lines": len(self.maintenance_lines),
            "pss.driver": pss(procs["driver"]),
            "pss.jvm": pss(procs["jvm"]),
            "pss.workers": pss(procs["workers"]),
            "pss.collector": pss([self.collector.proc.pid]),
            "pss.broker": pss([broker]) if broker is not None else math.nan,
            "pss.producer": pss([self.producer.proc.pid]),
            "workers": len(procs["workers"]),
            # cores busy on average over the minute (CPU seconds a second)
            **{f"cpu.{k}": round(v, 4) for k, v in busy.items()},
            "cpu.job": round(sum(v for k, v in busy.items() if k != "collector"), 4),
            "load": live._loadavg(),
        }
        if self.native_memory:
            s.update(jvm_native_memory(procs["jvm"]))
        tables = delta_tables(self.job_folder / "delta")
        for name, stats in tables.items():
            for k, v in stats.items():
                s[f"table.{name}.{k}"] = v
        s["tables.bytes"] = sum(t["bytes"] for t in tables.values())
        live_bytes = [t["live_bytes"] for t in tables.values()]
        s["tables.live_bytes"] = math.nan if -1 in live_bytes else sum(live_bytes)
        files, size = tree_stats(self.job_folder / "checkpoint")
        s["checkpoint.files"], s["checkpoint.bytes"] = files, size
        states = [d for d in (self.job_folder / "checkpoint").glob("**/state") if d.is_dir()]
        s["checkpoint.state_bytes"] = sum(tree_stats(d)[1] for d in states)
        self._last_at, self._last_read, self._last_acked = now, read, acked
        self._last_events = events
        self._last_cpu = cpu
        self.samples.append(s)
        with (self.out / "samples.jsonl").open("a") as f:
            f.write(json.dumps(s) + "\n")
        return s

    @property
    def job_folder(self) -> Path:
        return STATE / "job"

    def _perf_of(self, unix_ms: int) -> float:
        """A Unix time in ms as this process's ``perf_counter``."""
        return time.perf_counter() - (time.time() - unix_ms / 1000)


def progress_line(s: Mapping[str, Any]) -> str:
    gib = 1024**3
    jvm, drv, wrk = s["pss.jvm"] / gib, s["pss.driver"] / gib, s["pss.workers"] / gib
    return (
        f"[soak {s['t_s'] / 60:5.1f} min] tables {_size(s['tables.bytes'])} (live "
        f"{_size(s['tables.live_bytes'])}), checkpoint "
        f"{_size(s['checkpoint.bytes'])} ({s['checkpoint.files']} files); batches "
        f"{s['batch.count']} p50 {s['batch.p50_s']:.1f} s p95 {s['batch.p95_s']:.1f} s; input "
        f"{s['input_rate']:,.0f}/s vs produced {s['produce_rate']:,.0f}/s, behind "
        f"{s['job_behind_records']:,}; trials "
        f"{s['trials.count']} p95 {s['trials.p95_ms']:.0f} ms; PSS JVM {jvm:.2f} driver "
        f"{drv:.2f} workers {wrk:.2f} collector {s['pss.collector'] / gib:.2f} GiB; "
        f"maintenance lines {s['maintenance_lines']}; load {s['load']:.1f}"
    )


def write_csv(samples: Sequence[Mapping[str, Any]], path: Path) -> None:
    keys: dict[str, None] = {}
    for s in samples:
        keys.update(dict.fromkeys(s))
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(keys))
        w.writeheader()
        for s in samples:
            w.writerow(s)


def evaluate(
    samples: Sequence[Mapping[str, Any]],
    *,
    groups: int,
    window_min: float,
    first_maintenance_s: float | None,
) -> tuple[list[Growth], list[Verdict], float]:
    """Every series' growth, the targets, and where the judged window starts (seconds):
    the last ``window_min`` minutes, not before the first maintenance cycle."""
    end_s = samples[-1]["t_s"] if samples else 0.0
    since = max(end_s - window_min * 60, first_maintenance_s or 0.0)
    growths = []
    for q in quantities(samples):
        series = [
            (float(s["t_s"]), float(s[q.key]))
            for s in samples
            if isinstance(s.get(q.key), int | float)
        ]
        growths.append(growth(q, series, since_s=since, groups=groups))
    return growths, verdicts(growths, groups), since


# -- main -------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["collect"]:
        return collector_main(argv[1:])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", type=int, default=2_000, help="groups committing live")
    parser.add_argument("--duration-min", type=float, default=60, help="live minutes (60)")
    parser.add_argument("--sample-every-s", type=float, default=60, help="one sample this often")
    parser.add_argument("--trial-every-s", type=float, default=20, help="one trial this often")
    parser.add_argument("--warmup-s", type=int, default=30, help="live seconds before trials")
    parser.add_argument("--scrape-interval-ms", type=int, default=50)
    parser.add_argument(
        "--flat-window-min",
        type=float,
        default=30,
        help="judge flatness over the last this many minutes (from the first maintenance on)",
    )
    parser.add_argument(
        "--maintenance-pattern",
        default=DEFAULT_MAINTENANCE,
        help="a regular expression matching the job's lines of a maintenance cycle",
    )
    parser.add_argument(
        "--retention-hours",
        type=float,
        default=None,
        help="the job's delta_log_retention_hours and deleted_file_retention_hours (its "
        "defaults 48 and 24): from 1, what waits on disk is removed within the run",
    )
    parser.add_argument(
        "--jvm-native-memory",
        action="store_true",
        help="run the job's JVM with Native Memory Tracking and sample each area's committed "
        "bytes (jvm.*): where its memory grows",
    )
    parser.add_argument("--out", type=Path, default=OUT, help=f"samples and report ({OUT})")
    steady.add_run_options(parser, "--job-arg=--conf --job-arg=spark.driver.memory=1g", STATE)
    args = parser.parse_args(argv)
    import random

    from tests.conftest import free_ports

    groups = live.plan_groups(args.groups)
    for g in groups[:5]:
        live.check_commits(g)
    per_s = sum(len(g.owned) for g in groups) * 1000 / steady.COMMIT_INTERVAL_MS
    shutil.rmtree(STATE, ignore_errors=True)
    STATE.mkdir(parents=True)
    shutil.rmtree(args.out, ignore_errors=True)
    args.out.mkdir(parents=True)
    maintenance = re.compile(args.maintenance_pattern)
    if args.retention_hours is not None:  # the job's environment layer
        for field in ("DELTA_LOG_RETENTION_HOURS", "DELETED_FILE_RETENTION_HOURS"):
            os.environ[f"REBALANCE_MONITOR_{field}"] = f"{args.retention_hours:g}"
    schedule_path = STATE / "schedule.json"
    print(f"machine: {os.cpu_count()} cores, load average {live._loadavg():.1f}", flush=True)
    with steady._broker(STATE / "kafka") as (bootstrap, _broker_log):
        steady.ensure_offsets_topic(bootstrap)
        create_membership_topic(bootstrap)
        producer, prelude_records = live.begin(bootstrap, groups, STATE / "producer.log")
        (port,) = free_ports(1)
        url = f"http://127.0.0.1:{port}/metrics"
        print(f"the job: rebalance-monitor run, trigger 1 s, exporter {url} ...", flush=True)
        job_args = [*args.job_arg, *(tracked_jvm(args.job_arg) if args.jvm_native_memory else [])]
        job = stream.JobProcess(
            bootstrap, steady.OFFSETS_TOPIC, MEMBERSHIP_TOPIC, STATE / "job", port, *job_args
        )
        collector: CollectorProcess | None = None
        writer = scraper = None
        try:
            job.first("started:", timeout_s=600)
            live._wait_for(
                lambda: live.job_total(job) >= prelude_records, 600, job, "the prelude read"
            )
            print(f"  prelude processed (batch {live.batches(job)[-1].batch})", flush=True)
            collector = CollectorProcess(
                bootstrap, args.groups, schedule_path, STATE / "collector.log"
            )
            live._wait_for(
                lambda: collector is not None and collector.snapshots >= 1,
                300,
                job,
                "the collector's first snapshot",
            )
            print(f"  collector: first snapshot, {collector.events:,} events", flush=True)

            start_ms = (live._now_ms() // 1000 + 2) * 1000
            end_ms = start_ms + int(args.duration_min * 60_000)
            Schedule(start_ms, end_ms).write(schedule_path)
            every_ms = int(args.trial_every_s * 1000)
            trial_times = [
                t + random.randrange(1000)
                for t in range(start_ms + args.warmup_s * 1000, end_ms - 1000, every_ms)
            ]
            writer = live.Writer(producer, groups, start_ms, end_ms, trial_times)
            scraper = live.Scraper(url, writer.trials, args.scrape_interval_ms / 1000)
            print(
                f"live: {len(groups):,} groups x {len(groups[0].owned)} partitions every "
                f"{steady.COMMIT_INTERVAL_MS // 1000} s = {per_s:,.0f} records/s for "
                f"{args.duration_min:g} min, the collector every 5 s; {len(trial_times)} "
                f"trials; a sample every {args.sample_every_s:g} s into {args.out}",
                flush=True,
            )
            writer.start()
            scraper.start()
            while live._now_ms() < start_ms:
                time.sleep(0.05)
            sampler = Sampler(
                job=job,
                producer=producer,
                collector=collector,
                writer=writer,
                broker_folder=STATE / "kafka",
                maintenance=maintenance,
                started=time.perf_counter(),
                out=args.out,
                native_memory=args.jvm_native_memory,
            )
            next_sample = sampler.started + args.sample_every_s
            while writer.is_alive():
                producer.check_alive()
                collector.check_alive()
                live._note_acks(writer.trials, producer.stats)
                if job.proc.poll() is not None:
                    raise SystemExit(f"the job exited with {job.proc.returncode} (log {job.log})")
                if time.perf_counter() >= next_sample:
                    next_sample += args.sample_every_s
                    print(progress_line(sampler.sample()), file=sys.stderr, flush=True)
                writer.join(timeout=1)
            if writer.error is not None:
                raise SystemExit(f"the writer failed: {writer.error!r}")
            live._note_acks(writer.trials, producer.stats)
            print(progress_line(sampler.sample()), file=sys.stderr, flush=True)
        finally:
            if scraper is not None:
                scraper.stop()
            if writer is not None:
                writer.stop()
            with contextlib.suppress(SystemExit):
                producer.close(timeout_s=30)
            if collector is not None:
                collector.stop()
            job.stop()

    samples = sampler.samples
    first_m = sampler.maintenance_lines[0][0] if sampler.maintenance_lines else None
    growths, checks, since = evaluate(
        samples, groups=args.groups, window_min=args.flat_window_min, first_maintenance_s=first_m
    )
    lat = [t.latency_ms for t in writer.trials if t.latency_ms is not None]
    head = [
        f"soak: {args.groups:,} groups, {per_s:,.0f} records/s due, {samples[-1]['t_s'] / 60:.1f} "
        f"min live, {len(samples)} samples, job args {args.job_arg or 'none'}, "
        f"table retention {args.retention_hours or 'default'} h",
        f"maintenance: {len(sampler.maintenance_lines)} job lines matched "
        + (
            f"(first at {first_m / 60:.1f} min: {sampler.maintenance_lines[0][1][:120]!r})"
            if first_m is not None
            else "(none: no maintenance cycle seen; the window is the last minutes alone)"
        ),
        f"judged window: from {since / 60:.1f} min to {samples[-1]['t_s'] / 60:.1f} min; "
        f"30-day projection at {REFERENCE_GROUPS:,} groups (bytes and state x "
        f"{REFERENCE_GROUPS / args.groups:g}, files by time)",
        f"detection latency, {len(lat)} trials: p50 {quantile(lat, 0.5):.0f} ms, p95 "
        f"{quantile(lat, 0.95):.0f} ms, max {max(lat, default=0):.0f} ms",
        "",
    ]
    text = "\n".join(head) + markdown(growths, checks, since)
    print()
    print(text)
    (args.out / "report.md").write_text(text + "\n")
    write_csv(samples, args.out / "samples.csv")
    summary = {
        "groups": args.groups,
        "duration_min": args.duration_min,
        "job_args": args.job_arg,
        "retention_hours": args.retention_hours,
        "window_start_s": since,
        "maintenance_lines": sampler.maintenance_lines,
        "growth": [asdict(g) for g in growths],
        "targets": [asdict(v) for v in checks],
        "trials": [asdict(t) | {"latency_ms": t.latency_ms} for t in writer.trials],
    }
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2, default=str) + "\n")
    for log in STATE.glob("*.log"):  # the job's, the collector's and the producer's output
        shutil.copy2(log, args.out / log.name)
    if not args.keep:
        shutil.rmtree(STATE, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
