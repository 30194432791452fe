"""One group member on librdkafka (confluent-kafka), in its own OS process.

The librdkafka counterpart of :mod:`streaming.simulate.member`: the same command line (plus
``--group-protocol`` and ``--remote-assignor`` for a KIP-848 group), the same JSON lines on
stdout, the same stop rules (SIGTERM, SIGINT, end of stdin: ``Consumer.close``, which sends
LeaveGroup for a dynamic member and nothing for a static one; SIGKILL is a crash)::

    python -m streaming.simulate.rdkafka_member --bootstrap-server 127.0.0.1:19092 \\
        --group G --name A --topics Order,Stock --assignor cooperative-sticky

Classic assignors: ``range``, ``roundrobin``, ``cooperative-sticky`` (librdkafka's own).
The member id and generation of an ``assignment`` line come from the consumer's group
metadata (``rd_kafka_consumer_group_metadata_write``: magic ``CGMDv2:``, the generation as
a native int32, then the NUL-terminated group id and member id); KIP-848: the member epoch.
librdkafka bumps the generation at the JoinGroup response, before SyncGroup hands out the
new assignment, so a line is printed at each rebalance callback (after SyncGroup: what the
member holds once the callback's partitions are assigned or revoked) and for what two
consecutive statistics ticks (``statistics.interval.ms``) saw with the group ``up``, its
join state ``steady`` and the same rebalance count (a rebalance in between changes one of
them). A cooperative member that revokes rejoins at once and is never steady in between.
"""

from __future__ import annotations

import argparse
import json
import signal
import struct
import sys
import threading
import time
from collections.abc import Iterable, Sequence
from typing import Any

from streaming.simulate.member import _Output, _watch_stdin

__all__ = ["RDKAFKA_ASSIGNORS", "group_metadata", "main"]

#: The classic assignors librdkafka implements, by Kafka protocol name.
RDKAFKA_ASSIGNORS = ("range", "roundrobin", "cooperative-sticky")

_MAGIC = b"CGMDv2:"
STATS_INTERVAL_MS = 100


def group_metadata(blob: bytes) -> tuple[str, int]:
    """(member id, generation) of librdkafka's serialized consumer group metadata."""
    if not blob.startswith(_MAGIC) or len(blob) < len(_MAGIC) + 4:
        raise ValueError(f"not librdkafka group metadata: {blob[:16]!r}")
    at = len(_MAGIC)
    (generation,) = struct.unpack_from("=i", blob, at)
    at += 4
    end = blob.index(b"\0", at)  # group id
    at = end + 1
    end = blob.index(b"\0", at)
    return blob[at:end].decode("utf-8"), generation


def _partitions(tps: Iterable[Any]) -> list[list[Any]]:
    return [[t, p] for t, p in sorted((tp.topic, tp.partition) for tp in tps)]


class RdMember:
    """The consumer loop of one librdkafka member; :meth:`run` returns the exit status."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.out = _Output(args.name)
        self.stop = threading.Event()
        self.commits = 0
        self.fatal: str | None = None
        self.last: tuple[str, int, tuple[tuple[str, int], ...]] | None = None
        self.ticks = 0
        """Statistics ticks so far."""
        self.steady: int | None = None
        """The rebalance count of the latest tick if the group was up and steady, else None."""

    def _config(self) -> dict[str, Any]:
        a = self.args
        conf: dict[str, Any] = {
            "bootstrap.servers": a.bootstrap_server,
            "group.id": a.group,
            "client.id": a.client_id,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "allow.auto.create.topics": False,
            "topic.metadata.refresh.interval.ms": a.metadata_max_age_ms,
            "error_cb": self._on_error,
            "statistics.interval.ms": STATS_INTERVAL_MS,
            "stats_cb": self._on_stats,
        }
        if a.group_protocol == "consumer":
            conf["group.protocol"] = "consumer"
            conf["group.remote.assignor"] = a.assignor
        else:
            conf["partition.assignment.strategy"] = a.assignor
            conf["session.timeout.ms"] = a.session_timeout_ms
            conf["heartbeat.interval.ms"] = a.heartbeat_interval_ms
            conf["max.poll.interval.ms"] = a.max_poll_interval_ms
        if a.instance_id:
            conf["group.instance.id"] = a.instance_id
        return conf

    def _report(self, consumer: Any, partitions: set[tuple[str, int]]) -> None:
        """An ``assignment`` line, if (member id, generation, partitions) changed."""
        member_id, generation = group_metadata(consumer.consumer_group_metadata())
        snapshot = (member_id, generation, tuple(sorted(partitions)))
        if member_id and generation >= 0 and snapshot != self.last:
            self.last = snapshot
            self.out.emit(
                "assignment",
                member_id=member_id,
                generation=generation,
                partitions=[list(tp) for tp in snapshot[2]],
            )

    def _on_stats(self, text: str) -> None:
        cgrp = json.loads(text).get("cgrp") or {}
        self.ticks += 1
        up = cgrp.get("state") == "up" and cgrp.get("join_state") == "steady"
        self.steady = int(cgrp.get("rebalance_cnt", 0)) if up else None

    def _on_error(self, err: Any) -> None:
        if err.fatal():
            self.fatal = str(err)

    def run(self) -> int:
        from confluent_kafka import Consumer, KafkaException, TopicPartition

        a = self.args
        self.out.emit(
            "started", client_id=a.client_id, instance_id=a.instance_id, kind="librdkafka"
        )
        consumer = Consumer(self._config())
        out = self.out

        def held(c: Any) -> set[tuple[str, int]]:
            return {(tp.topic, tp.partition) for tp in c.assignment()}

        def on_assign(c: Any, tps: list[Any]) -> None:
            if tps:
                out.emit("assigned", partitions=_partitions(tps))
            self._report(c, held(c) | {(tp.topic, tp.partition) for tp in tps})

        def on_revoke(c: Any, tps: list[Any]) -> None:
            if tps:
                out.emit("revoked", partitions=_partitions(tps))
            self._report(c, held(c) - {(tp.topic, tp.partition) for tp in tps})

        def on_lost(_c: Any, tps: list[Any]) -> None:
            if tps:
                out.emit("lost", partitions=_partitions(tps))

        topics = [f"^{a.pattern}$"] if a.pattern else a.topics.split(",")
        consumer.subscribe(topics, on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)
        seen: tuple[object, ...] | None = None  # the previous tick's view, if steady
        tick = 0
        next_commit = time.monotonic() + a.commit_interval_ms / 1000
        try:
            while not self.stop.is_set():
                consumer.poll(a.poll_ms / 1000)
                if self.fatal is not None:
                    raise KafkaException(self.fatal)
                member_id, generation = group_metadata(consumer.consumer_group_metadata())
                assigned = tuple(sorted((tp.topic, tp.partition) for tp in consumer.assignment()))
                snapshot = (member_id, generation, assigned)
                if self.ticks != tick:
                    tick = self.ticks
                    view = None if self.steady is None else (*snapshot, self.steady)
                    if view is not None and view == seen:
                        self._report(consumer, set(assigned))
                    seen = view
                if assigned and time.monotonic() >= next_commit:
                    next_commit = time.monotonic() + a.commit_interval_ms / 1000
                    # each partition's position, 0 before its first fetch (the scenarios'
                    # topics start empty), as Java's commitAsync() commits every position
                    offsets = [
                        TopicPartition(tp.topic, tp.partition, max(tp.offset, 0))
                        for tp in consumer.position(consumer.assignment())
                    ]
                    try:
                        consumer.commit(offsets=offsets, asynchronous=False)
                        self.commits += 1
                    except KafkaException:
                        pass  # nothing consumed yet, or a rebalance: the next round commits
        except KafkaException as exc:
            self.out.emit("error", message=f"KafkaException: {exc}")
            consumer.close()
            return 1
        consumer.close()
        self.out.emit("closed", commits=self.commits)
        return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m streaming.simulate.rdkafka_member",
        description="One librdkafka (confluent-kafka) group member printing JSON lines.",
    )
    p.add_argument("--bootstrap-server", required=True)
    p.add_argument("--group", required=True)
    p.add_argument("--name", required=True)
    p.add_argument("--client-id", default=None, help="client.id (default: --name)")
    sub = p.add_mutually_exclusive_group(required=True)
    sub.add_argument("--topics")
    sub.add_argument("--pattern")
    p.add_argument("--group-protocol", choices=("classic", "consumer"), default="classic")
    p.add_argument("--assignor", default="range", help="classic assignor or KIP-848 assignor")
    p.add_argument("--instance-id", default=None)
    p.add_argument("--session-timeout-ms", type=int, default=10_000)
    p.add_argument("--heartbeat-interval-ms", type=int, default=None)
    p.add_argument("--max-poll-interval-ms", type=int, default=30_000)
    p.add_argument("--metadata-max-age-ms", type=int, default=1_000)
    p.add_argument("--commit-interval-ms", type=int, default=1_000)
    p.add_argument("--poll-ms", type=int, default=100)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.client_id is None:
        args.client_id = args.name
    if args.heartbeat_interval_ms is None:
        args.heartbeat_interval_ms = max(100, min(1_000, args.session_timeout_ms // 4))
    if args.group_protocol == "classic" and args.assignor not in RDKAFKA_ASSIGNORS:
        print(f"librdkafka has no classic assignor {args.assignor!r}", file=sys.stderr)
        return 2
    member = RdMember(args)

    def request_stop(_signum: int, _frame: object) -> None:
        member.stop.set()

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)
    threading.Thread(target=_watch_stdin, args=(member.stop,), daemon=True).start()
    try:
        return member.run()
    except Exception as exc:
        member.out.emit("error", message=f"{type(exc).__name__}: {exc}")
        raise


if __name__ == "__main__":
    raise SystemExit(main())
