"""Real Java consumer groups, side by side, and what the tracker makes of them.

:func:`play` runs :func:`streaming.simulate.scenarios.tracker_steps` for every strategy at
once (one thread per group, one JVM per member: kafka-clients 4.4.0 ``SimConsumer``)
against a broker, with the real collector polling every 2 s into its own membership topic,
and then reads back everything the groups left: the raw ``__consumer_offsets`` records of
the groups and the collector's events. :func:`track` feeds them to the tracker the way the
job does (both sources merged, one ``apply`` per group per one-second micro-batch, ``now``
the batch's logical time) and returns each group's rebalance events.

:func:`expected_churn` computes a rebalance's churn from what the members reported (their
``assignment`` lines, per member and generation), independently of the tracker and of
``assign_core``.

``python -m tests.integration.java_groups --bootstrap-server H:P --out F.pickle`` records a
play for offline study; ``--replay F.pickle`` prints the tracker's tables of a recording.
"""

from __future__ import annotations

import argparse
import contextlib
import pickle
import secrets
import sys
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition  # type: ignore[import-untyped]
from kafka.errors import KafkaError  # type: ignore[import-untyped]

from streaming.codec import decode_record
from streaming.collector import Collector, CollectorConfig
from streaming.simulate.model import MemberKind
from streaming.simulate.runner import run_scenario
from streaming.simulate.scenarios import ScenarioResult, tracker_steps
from streaming.tracking import (
    GroupState,
    Observation,
    RebalanceEvent,
    TrackerConfig,
    apply,
    parse_membership_json,
    routing_keys,
)
from tests.broker_log import Verdict, judge, rebalance_reasons
from tests.fixtures.capture_golden import key_group_id

OFFSETS_TOPIC = "__consumer_offsets"
CLUSTER = "local"
COLLECTOR_INTERVAL_S = 2.0
BATCH_MS = 1_000

#: (group protocol, assignor) of every group played side by side.
STRATEGIES: tuple[tuple[str, str], ...] = (
    ("classic", "range"),
    ("classic", "roundrobin"),
    ("classic", "sticky"),
    ("classic", "cooperative-sticky"),
    ("consumer", "uniform"),
    ("consumer", "range"),
)

#: The same for librdkafka members (librdkafka has no eager ``sticky``).
RDKAFKA_STRATEGIES: tuple[tuple[str, str], ...] = tuple(
    s for s in STRATEGIES if s != ("classic", "sticky")
)

Json = dict[str, Any]


@dataclass
class Play:
    """One play: the scenario results by strategy label and the raw records read back."""

    prefix: str
    membership_topic: str
    results: dict[str, ScenarioResult]
    offsets: list[Json]
    """``{partition, offset, timestamp_ms, key, value}`` (hex) of the groups' records."""
    membership: list[Json]
    """``{partition, offset, timestamp_ms, value}`` (text) of the collector's events."""
    duration_s: float


def label(protocol: str, assignor: str) -> str:
    return f"kip848-{assignor}" if protocol == "consumer" else assignor


def play(
    bootstrap_servers: str,
    *,
    log_dir: Path,
    prefix: str | None = None,
    strategies: Sequence[tuple[str, str]] = STRATEGIES,
    timeout_s: float = 420.0,
    kind: MemberKind = "java",
    delete_topics: bool = True,
) -> Play:
    """Run every strategy's steps side by side with the collector running; read back.
    ``kind``: the members' client (``java`` or ``librdkafka``); ``delete_topics=False``
    keeps the groups' topics and the membership topic (for a job to read afterwards)."""
    prefix = prefix or f"t17-{secrets.token_hex(3)}"
    topic = f"{prefix}.membership"
    collector = Collector(
        CollectorConfig(
            bootstrap_servers=bootstrap_servers,
            interval_s=COLLECTOR_INTERVAL_S,
            # the members' 6 s sessions: a member's last listing at every poll keeps the
            # crash rule's margin (docs/operations.md, poll_event_interval_s)
            poll_event_interval_s=COLLECTOR_INTERVAL_S,
            topic=topic,
            cluster=CLUSTER,
            group_filter=f"{prefix}-.*",
            topic_partitions=1,
        )
    )
    _wait_for_group_coordinators(bootstrap_servers, f"{prefix}-warm-up")
    stop = threading.Event()
    collecting = threading.Thread(target=collector.run, kwargs={"stop": stop}, daemon=True)
    results: dict[str, ScenarioResult] = {}
    t0 = time.monotonic()
    collecting.start()
    try:

        def run_one(protocol: str, assignor: str) -> None:
            results[label(protocol, assignor)] = run_scenario(
                tracker_steps(protocol, assignor, kind),  # type: ignore[arg-type]
                bootstrap_servers=bootstrap_servers,
                group_prefix=prefix,
                log_dir=log_dir,
                keep_topics=True,
                timeout_s=timeout_s,
            )

        threads = [
            threading.Thread(target=run_one, args=s, name=f"play-{label(*s)}", daemon=True)
            for s in strategies
        ]
        for i, thread in enumerate(threads):
            thread.start()
            if i + 1 < len(threads):
                time.sleep(1.0)  # the JVMs' start-ups spread a little on two cores
        for thread in threads:
            thread.join(timeout_s + 60)
        # the collector's view of the emptied groups (one more poll)
        time.sleep(COLLECTOR_INTERVAL_S * 1.5)
    finally:
        stop.set()
        collecting.join(30)
    groups = {r.group_id for r in results.values()}
    offsets, membership = read_back(bootstrap_servers, groups, topic)
    if delete_topics:
        drop_topics(
            bootstrap_servers, [topic, *(t for r in results.values() for t in r.topics.values())]
        )
    return Play(prefix, topic, results, offsets, membership, time.monotonic() - t0)


def drop_topics(bootstrap_servers: str, topics: list[str]) -> None:
    """Leave the broker as it was (after reading back: deleting a group's topics changes
    its subscription metadata, which a KIP-848 coordinator records)."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap_servers)
    try:
        with contextlib.suppress(KafkaError):  # a leftover is harmless: a prefix per run
            admin.delete_topics(topics)
    finally:
        admin.close()


def _wait_for_group_coordinators(bootstrap_servers: str, group_id: str) -> None:
    """A fresh broker creates ``__consumer_offsets`` (50 partitions) on the first group
    coordinator lookup, which on a loaded machine takes long: done before the steps' clock
    starts, by asking for a group until its coordinator answers."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap_servers, request_timeout_ms=30_000)
    deadline = time.monotonic() + 180
    try:
        while True:
            try:
                admin.list_group_offsets({group_id: None})
                return
            except KafkaError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(1.0)
    finally:
        admin.close()


def _read_all(reader: Any, tps: list[Any]) -> Iterable[Any]:
    if not tps:
        return
    reader.assign(tps)
    ends = reader.end_offsets(tps)
    reader.seek_to_beginning(*tps)
    deadline = time.monotonic() + 60
    while any(reader.position(tp) < ends[tp] for tp in tps):
        if time.monotonic() > deadline:
            raise TimeoutError("could not read the topics back within 60 s")
        for batch in reader.poll(timeout_ms=500).values():
            yield from batch


def read_back(
    bootstrap_servers: str, groups: set[str], membership_topic: str | None
) -> tuple[list[Json], list[Json]]:
    """The groups' ``__consumer_offsets`` records and every event of the membership topic
    (None: no collector ran, no events)."""
    reader = KafkaConsumer(
        bootstrap_servers=bootstrap_servers,
        group_id=None,
        enable_auto_commit=False,
        isolation_level="read_committed",
        exclude_internal_topics=False,
        max_partition_fetch_bytes=4 * 1024 * 1024,
    )
    try:
        parts = reader.partitions_for_topic(OFFSETS_TOPIC) or set()
        offsets = [
            {
                "partition": r.partition,
                "offset": r.offset,
                "timestamp_ms": r.timestamp,
                "key": bytes(r.key).hex(),
                "value": None if r.value is None else bytes(r.value).hex(),
            }
            for r in _read_all(reader, [TopicPartition(OFFSETS_TOPIC, p) for p in sorted(parts)])
            if key_group_id(bytes(r.key)) in groups
        ]
        mparts = (
            set()
            if membership_topic is None
            else reader.partitions_for_topic(membership_topic) or set()
        )
        membership = [
            {
                "partition": r.partition,
                "offset": r.offset,
                "timestamp_ms": r.timestamp,
                "value": bytes(r.value).decode("utf-8"),
            }
            for r in _read_all(
                reader, [TopicPartition(membership_topic, p) for p in sorted(mparts)]
            )
        ]
    finally:
        reader.close()
    return offsets, membership


# -- the tracker, as the job runs it -----------------------------------------------------------


def observations(p: Play) -> dict[str, list[Observation]]:
    """Group id -> its observations (topics events fanned out to every group they list)."""
    return records_observations(p.offsets, p.membership, {r.group_id for r in p.results.values()})


def records_observations(
    offsets: Sequence[Json], membership: Sequence[Json], groups: set[str]
) -> dict[str, list[Observation]]:
    """Group id -> its observations of records read back (:func:`read_back`)."""
    out: dict[str, list[Observation]] = {g: [] for g in groups}
    for raw in offsets:
        value = None if raw["value"] is None else bytes.fromhex(raw["value"])
        record = decode_record(bytes.fromhex(raw["key"]), value)
        obs = Observation("offsets", raw["partition"], raw["offset"], raw["timestamp_ms"], record)
        for g in routing_keys(record):
            if g in out:
                out[g].append(obs)
    for raw in membership:
        event = parse_membership_json(raw["value"])
        obs = Observation("membership", raw["partition"], raw["offset"], raw["timestamp_ms"], event)
        for g in routing_keys(event):
            if g in out:
                out[g].append(obs)
    return out


def track(
    p: Play, config: TrackerConfig | None = None, batch_ms: int = BATCH_MS
) -> dict[str, list[RebalanceEvent]]:
    """Group id -> its rebalance events, one ``apply`` per ``batch_ms`` of logical time."""
    return track_observations(observations(p), config, batch_ms)


def track_observations(
    by_group: Mapping[str, Sequence[Observation]],
    config: TrackerConfig | None = None,
    batch_ms: int = BATCH_MS,
) -> dict[str, list[RebalanceEvent]]:
    """Group id -> the rebalance events of its observations, as the job makes them: one
    ``apply`` per ``batch_ms`` of logical time, then the held KIP-848 rebalance at its
    deadline."""
    config = config or TrackerConfig()
    out: dict[str, list[RebalanceEvent]] = {}
    for group, obs in by_group.items():
        state = GroupState.new(CLUSTER, group)
        events: list[RebalanceEvent] = []
        by_batch: dict[int, list[Observation]] = {}
        for o in obs:
            by_batch.setdefault(o.logical_ts_ms // batch_ms, []).append(o)
        for b in sorted(by_batch):
            state, emitted = apply(state, by_batch[b], (b + 1) * batch_ms, config=config)
            events.extend(e for e in emitted if isinstance(e, RebalanceEvent))
        # the job's timer: a held KIP-848 rebalance is emitted at its deadline
        deadline = state.next_deadline_ms(config.reconcile_timeout_ms)
        if deadline is not None:
            state, emitted = apply(state, [], deadline, config=config)
            events.extend(e for e in emitted if isinstance(e, RebalanceEvent))
        out[group] = events
    return out


def causes_against_the_broker(
    bootstrap_servers: str, log_path: Path, groups: set[str]
) -> list[Verdict]:
    """Every classic rebalance the tracker finds in the groups' ``__consumer_offsets``
    records, held against the reason the group coordinator logged when it started it
    (``log_path``: the broker's ``server.log``, :mod:`tests.broker_log`)."""
    offsets, membership = read_back(bootstrap_servers, groups, None)
    tracked = track_observations(records_observations(offsets, membership, groups))
    rows = [e for g in sorted(groups) for e in tracked[g]]
    return judge(rows, rebalance_reasons(log_path, groups))


def assert_causes_agree(
    library: str, bootstrap_servers: str, log_path: Path, played: Mapping[str, Sequence[str]]
) -> list[Verdict]:
    """A tier's check: every played group's rebalances (at least four each, not only the
    scripted steps) agree with the broker (:func:`causes_against_the_broker`); returns
    their verdicts."""
    groups = {g for gs in played.values() for g in gs}
    verdicts = causes_against_the_broker(bootstrap_servers, log_path, groups)
    disagree = [v for v in verdicts if not v.agrees]
    print(f"{library}: {len(verdicts) - len(disagree)} of {len(verdicts)} causes agree")
    assert len(verdicts) >= 4 * len(groups)
    assert disagree == [], disagree
    return verdicts


# -- what the members reported -----------------------------------------------------------------

TP = tuple[str, int]


def reported(result: ScenarioResult) -> dict[tuple[str, int], tuple[str, frozenset[TP]]]:
    """(member id, generation) -> (member name, partitions): what each member held in each
    generation (KIP-848: member epoch) by its own ``assignment`` lines; topics are real
    names. A member prints a line whenever its member id, generation or partitions change,
    so one generation can have several: empty before its assignment arrived (a joiner,
    a poll that returned mid-rebalance), reduced while it revokes for the next one (eager:
    everything). What it held in the generation is the largest of them."""
    out: dict[tuple[str, int], tuple[str, frozenset[TP]]] = {}
    for e in result.events:
        if e.event != "assignment" or e.member_id is None or e.generation is None:
            continue
        parts = frozenset((result.topics.get(t, t), p) for t, p in e.partitions)
        key = (e.member_id, int(e.generation))
        if key not in out or len(parts) > len(out[key][1]):
            out[key] = (e.name, parts)
    return out


def names_of(result: ScenarioResult) -> dict[str, str]:
    """Member id -> member name (every incarnation)."""
    return {e.member_id: e.name for e in result.events if e.event == "assignment" and e.member_id}


@dataclass(frozen=True)
class Churn:
    moved: int
    revoked: int
    assigned: int
    paused: int


def expected_churn(
    before: Mapping[str, frozenset[TP]], after: Mapping[str, frozenset[TP]], *, eager: bool
) -> Churn:
    """Churn between two assignments keyed by member *name* (a static member keeps its
    name across restarts, so it is its identity): a partition is moved when it is owned
    after by someone other than its owner before; revoked/assigned count what each member
    lost/gained; paused is everything owned before (eager) or what left its owner."""
    owner_before = {tp: m for m, tps in before.items() for tp in tps}
    owner_after = {tp: m for m, tps in after.items() for tp in tps}
    moved = sum(1 for tp, m in owner_before.items() if tp in owner_after and owner_after[tp] != m)
    revoked = sum(len(tps - after.get(m, frozenset())) for m, tps in before.items())
    assigned = sum(len(tps - before.get(m, frozenset())) for m, tps in after.items())
    if eager:
        paused = len(owner_before)
    else:
        paused = sum(1 for tp, m in owner_before.items() if owner_after.get(tp) != m)
    return Churn(moved, revoked, assigned, paused)


def stages(result: ScenarioResult) -> list[tuple[str, int, int]]:
    """(label, from, to] in wall-clock ms of every waiting step: what happened since the
    previous one (the steps before it and the wait itself)."""
    out: list[tuple[str, int, int]] = []
    start = 0
    for step in result.steps:
        if step.label is not None:
            out.append((step.label, start, step.ended_ts_ms))
            start = step.ended_ts_ms
    return out


def by_stage(
    result: ScenarioResult, events: Sequence[RebalanceEvent]
) -> dict[str, list[RebalanceEvent]]:
    """Each rebalance under the stage its record was written in (None: after the last)."""
    out: dict[str, list[RebalanceEvent]] = {label: [] for label, _a, _b in stages(result)}
    for e in events:
        label = next((lb for lb, a, b in stages(result) if a < e.event_ts_ms <= b), "after")
        out.setdefault(label, []).append(e)
    return out


#: A clean close that took longer than this shows a machine that lags behind (its commit
#: and leave request, the signs of life the tracker judges by, came late). A slow start
#: only delays a join, which changes no verdict.
SLOW_STEP_S = 3.0


#: The members each stage of :func:`tracker_steps` removes on purpose.
SCRIPTED_REMOVALS = {
    "B crashed": {"B"},
    "C left": {"C"},
    "D restarted": {"D"},
    "emptied": {"A", "D"},
}


def removed_by_coordinator(p: Play, result: ScenarioResult) -> list[tuple[int, str]]:
    """(time, member name) of every KIP-848 member the coordinator removed (its member
    metadata tombstoned): the raw records, not the tracker's reading of them."""
    names = names_of(result)
    out: list[tuple[int, str]] = []
    for raw in p.offsets:
        key = bytes.fromhex(raw["key"])
        if raw["value"] is not None or key_group_id(key) != result.group_id:
            continue
        record = decode_record(key, None)
        member_id = getattr(getattr(record, "key", None), "member_id", None)
        if getattr(record, "record_type", None) == 5 and member_id in names:
            out.append((raw["timestamp_ms"], names[member_id]))
    return out


def lagged_stages(result: ScenarioResult, p: Play | None = None) -> dict[str, list[str]]:
    """Stage label -> why the machine did not keep up in it, by the members' own evidence
    (never by the tracker's rows): a member lost its partitions (fenced: its heartbeats
    came too late), a running member got a new member id, a member took longer than
    :data:`SLOW_STEP_S` to close, or a static member's restart took more than 4/5 of its
    session timeout; with ``p``, also the coordinator removing a KIP-848 member the stage
    did not remove (a member fenced before it got partitions loses none). There the
    coordinator really removed members the script did not remove, or timings in the records
    are off by seconds; the tracker judges what the records say, which is no longer what
    the script says."""
    spec = {m.name: m for m in tracker_steps_members(result)}
    out: dict[str, list[str]] = {}

    def note(ts_ms: int, why: str) -> None:
        label = next((lb for lb, a, b in stages(result) if a < ts_ms <= b), None)
        if label is not None:
            out.setdefault(label, []).append(why)

    ids: dict[tuple[str, int], str] = {}
    for e in result.events:
        if e.event == "lost":
            note(e.ts_ms, f"{e.name} lost its partitions (fenced)")
        elif e.event == "assignment" and e.member_id:
            old = ids.get((e.name, e.pid))
            if old is not None and old != e.member_id:
                note(e.ts_ms, f"{e.name} got a new member id while running")
            ids[(e.name, e.pid)] = e.member_id
    if p is not None:
        for ts_ms, name in removed_by_coordinator(p, result):
            label = next((lb for lb, a, b in stages(result) if a < ts_ms <= b), None)
            if label is not None and name not in SCRIPTED_REMOVALS.get(label, set()):
                note(ts_ms, f"the coordinator removed {name} (fenced)")
    for i, step in enumerate(result.steps):
        if step.kind == "close" and step.elapsed_s > SLOW_STEP_S:
            note(step.started_ts_ms + 1, f"{step.kind} took {step.elapsed_s:.1f} s")
        if step.kind != "close" or i + 1 >= len(result.steps):
            continue
        nxt = result.steps[i + 1]
        name = step.description.split()[1]
        member = spec.get(name)
        if nxt.kind != "start" or member is None or member.instance_id is None:
            continue
        back = [
            e.ts_ms
            for e in result.events
            if e.name == name and e.event == "assignment" and e.ts_ms > nxt.started_ts_ms
        ]
        took_ms = (back[0] if back else nxt.ended_ts_ms) - step.started_ts_ms
        if took_ms > 0.8 * member.session_timeout_ms:
            note(step.started_ts_ms + 1, f"{name}'s restart took {took_ms / 1000:.1f} s")
    return out


def tracker_steps_members(result: ScenarioResult) -> tuple[Any, ...]:
    """The member specs the result was played with."""
    protocol = "consumer" if result.group_protocol == "consumer" else "classic"
    return tracker_steps(protocol, result.assignor).members  # type: ignore[arg-type]


def member_view(
    result: ScenarioResult, members: Iterable[Any], generation: int | None
) -> tuple[dict[str, frozenset[TP]], list[str]]:
    """{name: partitions} of ``members`` (tracker ``MemberInfo``) at ``generation`` by the
    members' own reports, and the names of those that reported nothing for it.

    A member holds nothing before the first generation it completed: a member that joined
    in a round that was over before its SyncGroup answered (a cooperative follow-up began)
    never saw that generation. Where the record gives it nothing, it held nothing; where the
    leader gave it partitions no one owned, it is missing: it never held what the coordinator
    stored for it."""
    reports = reported(result)
    names = names_of(result)
    first: dict[str, int] = {}
    for member_id, g in reports:
        first[member_id] = min(g, first.get(member_id, g))
    view: dict[str, frozenset[TP]] = {}
    missing: list[str] = []
    for m in members:
        got = None if generation is None else reports.get((m.member_id, generation))
        if got is not None:
            view[got[0]] = got[1]
        elif (
            generation is not None
            and generation < first.get(m.member_id, generation)
            and not m.partitions
        ):
            view[names[m.member_id]] = frozenset()
        else:
            missing.append(names.get(m.member_id, m.member_id))
    return view, missing


def table(result: ScenarioResult, events: Sequence[RebalanceEvent]) -> str:
    """The tracker's rows of one group as a Markdown table (step, generations, cause,
    departures, own divergence, moved/revoked/assigned/paused)."""
    names = names_of(result)
    lines = [
        f"**{result.group_protocol} {result.assignor}** ({result.group_id})",
        "",
        "| step | generation | cause (rule) | departures | own divergent "
        "| moved/revoked/assigned/paused |",
        "|---|---|---|---|---|---|",
    ]
    for label, rows in by_stage(result, events).items():
        for e in rows:
            c = e.churn
            deps = ", ".join(
                f"{names.get(d.member_id, d.member_id)} {d.kind} ({d.rule})" for d in e.departures
            )
            lines.append(
                f"| {label} | {e.generation_before}→{e.generation_after} | {e.cause} "
                f"({e.cause_rule}) | {deps or '-'} | {e.own_strategy_divergent} | "
                f"{c.moved_partitions}/{c.revoked_partitions}/{c.assigned_partitions}/"
                f"{len(e.paused_partitions)} |"
            )
    return "\n".join(lines)


# -- recording and replaying from the command line ---------------------------------------------


def dump(p: Play, path: Path) -> None:
    """Pickle ``p`` for ``--replay``."""
    path.write_bytes(pickle.dumps(p))


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.integration.java_groups")
    ap.add_argument("--bootstrap-server", default="127.0.0.1:19092")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--replay", type=Path, help="print the tables of a recording")
    ap.add_argument("--log-dir", type=Path, default=Path(".local/java-groups"))
    ap.add_argument("--kind", choices=("java", "librdkafka"), default="java")
    args = ap.parse_args(argv)
    if args.replay is not None:
        sys.modules["__main__"].Play = Play  # type: ignore[attr-defined]
        recorded = pickle.loads(args.replay.read_bytes())
        tracked = track(recorded)
        for r in recorded.results.values():
            print(table(r, tracked[r.group_id]) + "\n")
        return 0
    if args.out is None:
        ap.error("--out or --replay")
    strategies = STRATEGIES if args.kind == "java" else RDKAFKA_STRATEGIES
    p = play(args.bootstrap_server, log_dir=args.log_dir, kind=args.kind, strategies=strategies)
    with contextlib.suppress(OSError):
        dump(p, args.out)
    for name, r in p.results.items():
        print(f"{name}: {'ok' if r.error is None else r.error} in {r.duration_s:.1f} s")
    print(f"play took {p.duration_s:.1f} s; {len(p.offsets)} records, {len(p.membership)} events")
    return 0


if __name__ == "__main__":
    sys.exit(main())
