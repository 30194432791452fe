"""Where Kafka puts things: the group coordinator, a keyed record, a partition's replicas.

All three are pure functions that reproduce the Java/Scala code bit for bit:

* :func:`coordinator_partition`: the ``__consumer_offsets`` partition that owns a group,
  ``Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions`` (its leader is the group
  coordinator). ``Utils.abs`` maps ``Integer.MIN_VALUE`` to 0.
* :func:`murmur2` and :func:`partition_for_key`: the Java producer's partition of a record
  with a non-null key, ``toPositive(murmur2(keyBytes)) % numPartitions`` (Kafka's murmur2
  variant, seed ``0x9747b28c``). Records without a key use the sticky partitioner, which is
  random and not modelled here.
* :func:`assign_replicas_to_brokers`: ``AdminUtils.assignReplicasToBrokers`` (topic creation
  in ZooKeeper mode and ``kafka-reassign-partitions --generate``), rack-unaware and rack-aware,
  made deterministic by fixing the start index and the replica shift that Java draws from
  ``java.util.Random`` when ``fixedStartIndex`` is -1.

Invalid arguments raise :class:`~assign_core.errors.ScenarioError` naming the argument.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from assign_core.errors import ScenarioError
from assign_core.javacompat import java_sorted_strings, string_hash, to_int32

__all__ = [
    "DEFAULT_OFFSETS_PARTITIONS",
    "Broker",
    "assign_replicas_to_brokers",
    "coordinator_partition",
    "java_abs",
    "murmur2",
    "partition_for_key",
    "rack_alternated_broker_list",
    "to_positive",
]

#: ``offsets.topic.num.partitions`` default: partitions of ``__consumer_offsets``.
DEFAULT_OFFSETS_PARTITIONS = 50

_MASK32 = 0xFFFFFFFF
_INT32_MIN = -(2**31)
_MURMUR_SEED = 0x9747B28C
_MURMUR_M = 0x5BD1E995


def _positive_count(value: int, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ScenarioError(field, f"expected a positive integer, got {value!r}")
    return value


def java_abs(n: int) -> int:
    """Kafka ``Utils.abs``: ``Math.abs`` of an int, except ``Integer.MIN_VALUE`` -> 0."""
    n = to_int32(n)
    return 0 if n == _INT32_MIN else abs(n)


def to_positive(n: int) -> int:
    """Kafka ``Utils.toPositive``: ``n & 0x7fffffff`` (clears the sign bit)."""
    return n & 0x7FFFFFFF


def coordinator_partition(group_id: str, partitions: int = DEFAULT_OFFSETS_PARTITIONS) -> int:
    """The ``__consumer_offsets`` partition of ``group_id``; its leader is the coordinator.

    >>> coordinator_partition("my-group")
    12
    """
    _positive_count(partitions, "partitions")
    return java_abs(string_hash(group_id)) % partitions


def murmur2(data: bytes) -> int:
    """Kafka ``Utils.murmur2``: 32-bit MurmurHash2, seed ``0x9747b28c``, as a signed int."""
    length = len(data)
    h = (_MURMUR_SEED ^ length) & _MASK32
    n_words = length // 4
    for i in range(n_words):
        k = int.from_bytes(data[4 * i : 4 * i + 4], "little")
        k = (k * _MURMUR_M) & _MASK32
        k ^= k >> 24
        k = (k * _MURMUR_M) & _MASK32
        h = (h * _MURMUR_M) & _MASK32
        h ^= k
    tail = data[4 * n_words :]
    # Java's switch falls through: case 3 -> case 2 -> case 1, multiplying once at the end.
    if len(tail) == 3:
        h ^= tail[2] << 16
    if len(tail) >= 2:
        h ^= tail[1] << 8
    if tail:
        h ^= tail[0]
        h = (h * _MURMUR_M) & _MASK32
    h ^= h >> 13
    h = (h * _MURMUR_M) & _MASK32
    h ^= h >> 15
    return to_int32(h)


def partition_for_key(key: bytes | str, partitions: int) -> int:
    """The Java producer's partition for a record with this (serialized) key.

    A ``str`` is encoded as UTF-8, like Kafka's ``StringSerializer``. ``partitions`` is the
    topic's total partition count (available or not), as in ``BuiltInPartitioner``.

    >>> partition_for_key("foobar", 10)
    6
    """
    _positive_count(partitions, "partitions")
    data = key.encode("utf-8") if isinstance(key, str) else bytes(key)
    return to_positive(murmur2(data)) % partitions


@dataclass(frozen=True, slots=True)
class Broker:
    """A broker as replica placement sees it: its id and optional rack."""

    broker_id: int
    rack: str | None = None


def _jmod(a: int, b: int) -> int:
    """Java ``%`` on ints (the result has the sign of the dividend)."""
    r = abs(a) % abs(b)
    return -r if a < 0 else r


def _replica_index(first: int, shift: int, j: int, n: int) -> int:
    """``AdminUtils.replicaIndex`` with Java int/long arithmetic."""
    step = 1 + _jmod(to_int32(shift + j), n - 1)
    return _jmod(first + step, n)


def rack_alternated_broker_list(racks: Mapping[int, str]) -> list[int]:
    """``AdminUtils.getRackAlternatedBrokerList``: one broker per rack in turn.

    Racks are visited in name order (``String.compareTo``), brokers of a rack by ascending id:
    ``{0: r1, 1: r3, 2: r3, 3: r2, 4: r2, 5: r1}`` -> ``[0, 3, 1, 5, 4, 2]``.
    """
    by_rack: dict[str, list[int]] = {}
    for broker_id, rack in racks.items():
        by_rack.setdefault(rack, []).append(broker_id)
    columns = [sorted(by_rack[r]) for r in java_sorted_strings(by_rack)]
    out: list[int] = []
    depth = max((len(c) for c in columns), default=0)
    for i in range(depth):
        out.extend(c[i] for c in columns if i < len(c))
    return out


def _normalise_brokers(brokers: Iterable[Broker | int]) -> list[Broker]:
    out: list[Broker] = []
    seen: set[int] = set()
    for i, b in enumerate(brokers):
        broker = b if isinstance(b, Broker) else Broker(b)
        if isinstance(broker.broker_id, bool) or not isinstance(broker.broker_id, int):
            raise ScenarioError(f"brokers[{i}]", f"expected an integer broker id, got {b!r}")
        if broker.broker_id in seen:
            raise ScenarioError(f"brokers[{i}]", f"duplicate broker id {broker.broker_id}")
        seen.add(broker.broker_id)
        out.append(broker)
    return out


def assign_replicas_to_brokers(
    brokers: Sequence[Broker | int],
    n_partitions: int,
    replication_factor: int,
    *,
    fixed_start_index: int,
    start_partition_id: int = -1,
    replica_shift: int | None = None,
) -> dict[int, list[int]]:
    """``AdminUtils.assignReplicasToBrokers``: partition id -> replica broker ids, leader first.

    ``brokers`` in the order Java receives them (ZooKeeper mode passes them sorted by id).
    Without racks the assignment is rack-unaware; if every broker has a rack it is rack-aware
    (brokers rearranged by :func:`rack_alternated_broker_list`, further replicas prefer racks
    and then brokers without a replica yet); a partial set of racks is an error, as in Java.

    Java draws the start index and the replica shift from ``java.util.Random`` unless
    ``fixedStartIndex >= 0``, in which case both equal it. ``fixed_start_index`` must be given
    here; ``replica_shift`` overrides the shift (to model the two random draws), and defaults
    to ``fixed_start_index``. Partition ids start at ``max(0, start_partition_id)``.

    >>> assign_replicas_to_brokers([0, 1, 2, 3, 4], 6, 3, fixed_start_index=0)[5]
    [0, 2, 3]
    """
    _positive_count(n_partitions, "n_partitions")
    _positive_count(replication_factor, "replication_factor")
    members = _normalise_brokers(brokers)
    if replication_factor > len(members):
        raise ScenarioError(
            "replication_factor",
            f"replication factor {replication_factor} larger than available brokers: "
            f"{len(members)}",
        )
    if fixed_start_index < 0:
        raise ScenarioError(
            "fixed_start_index", "must be >= 0 (Java draws a random index when it is -1)"
        )
    start_index = fixed_start_index
    shift = fixed_start_index if replica_shift is None else replica_shift
    if shift < 0:
        raise ScenarioError("replica_shift", f"must be >= 0, got {shift}")
    first_partition = max(0, start_partition_id)

    racked = [b for b in members if b.rack is not None]
    if not racked:
        return _rack_unaware(
            [b.broker_id for b in members],
            n_partitions,
            replication_factor,
            start_index,
            shift,
            first_partition,
        )
    if len(racked) != len(members):
        missing = next(i for i, b in enumerate(members) if b.rack is None)
        raise ScenarioError(
            f"brokers[{missing}].rack",
            "not all brokers have rack information for replica rack aware assignment",
        )
    racks = {b.broker_id: b.rack for b in members if b.rack is not None}
    return _rack_aware(racks, n_partitions, replication_factor, start_index, shift, first_partition)


def _rack_unaware(
    broker_ids: list[int], n_partitions: int, rf: int, start: int, shift: int, first_pid: int
) -> dict[int, list[int]]:
    n = len(broker_ids)
    out: dict[int, list[int]] = {}
    pid = first_pid
    for _ in range(n_partitions):
        if pid > 0 and pid % n == 0:
            shift += 1
        first = (pid + start) % n
        replicas = [broker_ids[first]]
        replicas.extend(broker_ids[_replica_index(first, shift, j, n)] for j in range(rf - 1))
        out[pid] = replicas
        pid += 1
    return out


def _rack_aware(
    racks: dict[int, str], n_partitions: int, rf: int, start: int, shift: int, first_pid: int
) -> dict[int, list[int]]:
    arranged = rack_alternated_broker_list(racks)
    n = len(arranged)
    n_racks = len(set(racks.values()))
    out: dict[int, list[int]] = {}
    pid = first_pid
    for _ in range(n_partitions):
        if pid > 0 and pid % n == 0:
            shift += 1
        first = (pid + start) % n
        leader = arranged[first]
        replicas = [leader]
        racks_used = {racks[leader]}
        brokers_used = {leader}
        k = 0
        for _j in range(rf - 1):
            while True:
                broker = arranged[_replica_index(first, to_int32(shift * n_racks), k, n)]
                rack = racks[broker]
                k += 1
                if (rack not in racks_used or len(racks_used) == n_racks) and (
                    broker not in brokers_used or len(brokers_used) == n
                ):
                    replicas.append(broker)
                    racks_used.add(rack)
                    brokers_used.add(broker)
                    break
        out[pid] = replicas
        pid += 1
    return out
