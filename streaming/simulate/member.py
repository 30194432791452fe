"""One classic-protocol group member: a kafka-python consumer in its own OS process.

``rebalance-monitor simulate`` starts one of these per member (so ``kill -9`` is real)::

    python -m streaming.simulate.member --bootstrap-server 127.0.0.1:19092 \\
        --group G --name C1 --topics Order,Stock --assignor range --session-timeout-ms 2000

It joins the group with the given assignor (``range``, ``roundrobin``, ``sticky``,
``cooperative-sticky``; kafka-python 3.0 takes assignor instances), optionally as a static
member (``--instance-id``), polls, commits its positions every ``--commit-interval-ms`` (so
``__consumer_offsets`` gets commit records) and prints one JSON object per line on stdout —
the only thing the simulator reads:

=============  ===============================================================================
``event``      fields besides ``event``, ``name``, ``pid``, ``ts_ms`` (wall clock, ms)
=============  ===============================================================================
started        ``client_id``, ``instance_id``, ``kind`` (``python``)
assignment     ``member_id``, ``generation``, ``partitions`` ([[topic, partition], ...]):
               printed whenever (member id, generation, assignment) changes while the member
               is stable in the group
revoked        ``partitions``: ``onPartitionsRevoked`` (eager: everything, before each rejoin;
               cooperative: only what moves away)
assigned       ``partitions``: ``onPartitionsAssigned`` (eager: everything; cooperative: added)
lost           ``partitions``: ``onPartitionsLost`` (membership lost, e.g. session expired)
closed         ``commits``: the member closed cleanly (a dynamic member sent LeaveGroup)
error          ``message``: a fatal error; the process exits with status 1
=============  ===============================================================================

The Java members (``java/SimConsumer.java``) and the librdkafka members
(``rdkafka_member.py``) print the same lines.

SIGTERM, SIGINT and end of stdin close the consumer cleanly (``KafkaConsumer.close``, which
sends LeaveGroup for a dynamic member and nothing for a static one); SIGKILL is a crash. The
end-of-stdin rule means a member never outlives a simulator that was killed: the simulator
holds the write end of every member's stdin.

Diagnostics go to stderr (the simulator's member log): kafka-python warnings, all of its
logging with ``SIMULATE_MEMBER_LOG_LEVEL=DEBUG`` in the environment, and the stacks of every
thread on ``kill -USR1 <pid>``.
"""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import json
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from kafka import ConsumerRebalanceListener, KafkaConsumer
from kafka.coordinator.assignors.cooperative_sticky import (
    CooperativeStickyAssignor,
)
from kafka.coordinator.assignors.range import (
    RangePartitionAssignor,
)
from kafka.coordinator.assignors.roundrobin import (
    RoundRobinPartitionAssignor,
)
from kafka.coordinator.assignors.sticky.sticky_assignor import (
    StickyPartitionAssignor,
)
from kafka.errors import KafkaError
from kafka.structs import MemberState

__all__ = ["ASSIGNOR_NAMES", "Member", "main", "make_assignor"]

#: The classic assignors a Python member can use, by Kafka protocol name.
ASSIGNOR_NAMES = ("range", "roundrobin", "sticky", "cooperative-sticky")

Partition = tuple[str, int]


def make_assignor(name: str) -> Any:
    """A kafka-python assignor instance for a Kafka protocol name."""
    factories = {
        "range": RangePartitionAssignor,
        "roundrobin": RoundRobinPartitionAssignor,
        "sticky": StickyPartitionAssignor,
        "cooperative-sticky": CooperativeStickyAssignor,
    }
    if name not in factories:
        raise ValueError(f"unknown assignor {name!r}; expected one of {', '.join(ASSIGNOR_NAMES)}")
    return factories[name]()


class _Output:
    """JSON lines on stdout, one writer at a time (listener callbacks run on kafka-python's
    IO loop, the snapshots on the main thread)."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._lock = threading.Lock()

    def emit(self, event: str, **fields: Any) -> None:
        line = {
            "event": event,
            "name": self._name,
            "pid": os.getpid(),
            "ts_ms": int(time.time() * 1000),
            **fields,
        }
        text = json.dumps(line, separators=(",", ":"))
        with self._lock:
            try:
                sys.stdout.write(text + "\n")
                sys.stdout.flush()
            except (BrokenPipeError, ValueError):
                pass  # the simulator is gone; the stdin watcher ends us


def _partitions(tps: Iterable[Any]) -> list[list[Any]]:
    return [
        [topic, partition] for topic, partition in sorted((tp.topic, tp.partition) for tp in tps)
    ]


def _keep_join_awaited(consumer: Any) -> None:
    """Work around a kafka-python 3.0.12 race that silently drops a member from its group.

    A rejoin triggered by a metadata change (the leader sees new partitions) or by a pattern
    subscription picking up a topic does not set the coordinator's ``rejoin_needed`` flag.
    When ``poll(timeout_ms)`` returns while that JoinGroup/SyncGroup is in flight, the leader
    has meanwhile updated its assignment snapshot, so the next poll finds ``need_rejoin()``
    false and never awaits the join again: the member stays REBALANCING with heartbeats
    disabled until the coordinator expires its session. (The Java client also checks for a
    pending join; kafka-python 1.4.5 did, #1695.) Setting the flag while a join is in flight
    makes the next poll await it; the coordinator clears the flag when the join completes.
    """
    coordinator = getattr(consumer, "_coordinator", None)
    if coordinator is None or getattr(coordinator, "state", None) != MemberState.REBALANCING:
        return
    if not getattr(coordinator, "rejoin_needed", True):
        coordinator.request_rejoin()


class Member:
    """The consumer loop of one member; :meth:`run` returns the process exit status."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.out = _Output(args.name)
        self.stop = threading.Event()
        self.commits = 0

    # --- rebalance listener (kafka-python calls these on its IO loop) ---------------------

    def _listener(self) -> Any:
        out = self.out

        class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
            def on_partitions_revoked(self, revoked: Any) -> None:
                if revoked:
                    out.emit("revoked", partitions=_partitions(revoked))

            def on_partitions_assigned(self, assigned: Any) -> None:
                if assigned:
                    out.emit("assigned", partitions=_partitions(assigned))

            def on_partitions_lost(self, lost: Any) -> None:
                if lost:
                    out.emit("lost", partitions=_partitions(lost))

        return Listener()

    def _on_commit(self, _offsets: Any, response: Any) -> None:
        if not isinstance(response, Exception):
            self.commits += 1

    # --- main loop ------------------------------------------------------------------------

    def run(self) -> int:
        a = self.args
        self.out.emit("started", client_id=a.client_id, instance_id=a.instance_id, kind="python")
        consumer = KafkaConsumer(
            bootstrap_servers=a.bootstrap_server,
            group_id=a.group,
            client_id=a.client_id,
            group_instance_id=a.instance_id,
            partition_assignment_strategy=[make_assignor(a.assignor)],
            session_timeout_ms=a.session_timeout_ms,
            heartbeat_interval_ms=a.heartbeat_interval_ms,
            max_poll_interval_ms=a.max_poll_interval_ms,
            metadata_max_age_ms=a.metadata_max_age_ms,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            allow_auto_create_topics=False,
            **security_options(a.bootstrap_server, a.client_config),
        )
        try:
            if a.pattern:
                consumer.subscribe(pattern=a.pattern, listener=self._listener())
            else:
                consumer.subscribe(topics=a.topics.split(","), listener=self._listener())
            last: tuple[str, int, tuple[Partition, ...]] | None = None
            next_commit = time.monotonic() + a.commit_interval_ms / 1000
            while not self.stop.is_set():
                consumer.poll(timeout_ms=a.poll_ms)
                _keep_join_awaited(consumer)
                meta = consumer.group_metadata()
                if meta.state != MemberState.STABLE:
                    continue
                assigned = tuple(sorted((tp.topic, tp.partition) for tp in consumer.assignment()))
                snapshot = (meta.member_id, meta.generation_id, assigned)
                if snapshot != last:
                    last = snapshot
                    self.out.emit(
                        "assignment",
                        member_id=meta.member_id,
                        generation=meta.generation_id,
                        partitions=[list(tp) for tp in assigned],
                    )
                if assigned and time.monotonic() >= next_commit:
                    next_commit = time.monotonic() + a.commit_interval_ms / 1000
                    # KafkaError: a rebalance started; the next round commits
                    with contextlib.suppress(KafkaError):
                        consumer.commit_async(callback=self._on_commit)
        except KafkaError as exc:
            self.out.emit("error", message=f"{type(exc).__name__}: {exc}")
            consumer.close(autocommit=False, timeout_ms=5000)
            return 1
        consumer.close(autocommit=False, timeout_ms=5000)
        self.out.emit("closed", commits=self.commits)
        return 0


def _watch_stdin(stop: threading.Event) -> None:
    """End of stdin (the simulator closed it or died) asks for a clean close."""
    # os.read on the descriptor, not sys.stdin: a daemon thread blocked inside the buffered
    # reader holds its lock, and the interpreter aborts at exit when it cannot take it.
    try:
        while os.read(0, 4096):
            pass
    except OSError:
        pass
    stop.set()


def security_options(servers: str, client_config: Path | None) -> dict[str, Any]:
    """kafka-python's keyword arguments for the settings in ``client_config`` (none: {})."""
    if client_config is None:
        return {}
    from streaming.kafka_connection import KafkaConnection, read_properties

    return KafkaConnection(tuple(servers.split(",")), read_properties(client_config)).kafka_python()


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m streaming.simulate.member",
        description="One kafka-python group member printing its assignment as JSON lines.",
    )
    p.add_argument("--bootstrap-server", required=True)
    p.add_argument("--group", required=True)
    p.add_argument("--name", required=True, help="the member's name in the scenario (C1, ...)")
    p.add_argument("--client-id", default=None, help="client.id (default: --name)")
    sub = p.add_mutually_exclusive_group(required=True)
    sub.add_argument("--topics", help="comma-separated topic names")
    sub.add_argument("--pattern", help="a regular expression over topic names")
    p.add_argument("--assignor", choices=ASSIGNOR_NAMES, default="range")
    p.add_argument("--instance-id", default=None, help="group.instance.id (a static member)")
    p.add_argument("--session-timeout-ms", type=int, default=10_000)
    p.add_argument("--heartbeat-interval-ms", type=int, default=None)
    p.add_argument("--max-poll-interval-ms", type=int, default=30_000)
    p.add_argument("--metadata-max-age-ms", type=int, default=1_000)
    p.add_argument("--commit-interval-ms", type=int, default=1_000)
    p.add_argument("--poll-ms", type=int, default=100)
    p.add_argument(
        "--client-config",
        type=Path,
        default=None,
        help="a .properties file of the Java client's security settings (mapped to kafka-python)",
    )
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.client_id is None:
        args.client_id = args.name
    if args.heartbeat_interval_ms is None:
        args.heartbeat_interval_ms = max(100, min(1_000, args.session_timeout_ms // 4))
    logging.basicConfig(
        level=os.environ.get("SIMULATE_MEMBER_LOG_LEVEL", "WARNING").upper(),
        stream=sys.stderr,
        format=f"%(asctime)s {args.name} %(levelname)s %(name)s: %(message)s",
    )
    member = Member(args)

    def request_stop(_signum: int, _frame: object) -> None:
        member.stop.set()

    faulthandler.register(signal.SIGUSR1, all_threads=True)  # `kill -USR1`: stacks to the log
    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)
    threading.Thread(target=_watch_stdin, args=(member.stop,), daemon=True).start()
    try:
        return member.run()
    except Exception as exc:  # report anything unexpected as a line the simulator shows
        member.out.emit("error", message=f"{type(exc).__name__}: {exc}")
        raise


if __name__ == "__main__":
    raise SystemExit(main())
