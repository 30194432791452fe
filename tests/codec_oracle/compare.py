"""Field-by-field comparison of a decoded Python record with Kafka's reading of the same bytes.

Kafka's view (``RecordOracle.java``) dumps every field through its accessor, camelCase; the
Python model names a field by the snake case of its Kafka name unless its metadata says
otherwise (``metadata["kafka"]``; None = no Kafka counterpart). Returns a list of
human-readable differences (empty = equal).
"""

from __future__ import annotations

from dataclasses import fields, is_dataclass
from typing import Any

from streaming.codec.model import (
    CooperativeStickyUserData,
    GroupMetadata,
    GroupMetadataTombstone,
    MemberMetadata,
    OffsetCommitTombstone,
    StickyUserData,
    Subscription,
    TaggedField,
    Tombstone,
    Unknown,
)
from streaming.codec.reader import ZERO_UUID


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def kafka_name(f: Any) -> str | None:
    if "kafka" in f.metadata:
        name: str | None = f.metadata["kafka"]
        return name
    return camel(f.name)


def _tags(tags: tuple[TaggedField, ...]) -> list[list[Any]]:
    return [[t.tag, t.data.hex()] for t in tags]


def compare_value(py: Any, java: Any, path: str, diffs: list[str]) -> None:
    if is_dataclass(py) and not isinstance(py, type):
        compare_struct(py, java, path, diffs)
    elif isinstance(py, tuple):
        if not isinstance(java, list) or len(java) != len(py):
            diffs.append(f"{path}: python {py!r} != java {java!r}")
            return
        for i, (p, j) in enumerate(zip(py, java, strict=True)):
            compare_value(p, j, f"{path}[{i}]", diffs)
    elif isinstance(py, bytes):
        if java != py.hex():
            diffs.append(f"{path}: python {py.hex()} != java {java!r}")
    elif py != java or type(py) is not type(java):
        diffs.append(f"{path}: python {py!r} != java {java!r}")


def compare_struct(
    py: Any, java: Any, path: str, diffs: list[str], skip: tuple[str, ...] = ()
) -> None:
    """Every field of ``py`` against ``java``; fields named in ``skip`` are left out."""
    if not isinstance(java, dict):
        diffs.append(f"{path}: python {type(py).__name__} != java {java!r}")
        return
    seen = {"_unknownTaggedFields"}
    for f in fields(py):
        if f.name in skip:
            seen.add(kafka_name(f) or f.name)
            continue
        value = getattr(py, f.name)
        if f.name == "unknown_tags":
            if _tags(value) != java.get("_unknownTaggedFields", []):
                diffs.append(
                    f"{path}.unknown_tags: python {_tags(value)} != "
                    f"java {java.get('_unknownTaggedFields', [])}"
                )
            continue
        name = kafka_name(f)
        if name is None:
            continue
        seen.add(name)
        if name not in java:  # a field the Java class lacks: Python holds its default
            if value not in (None, -1, ZERO_UUID):
                diffs.append(f"{path}.{f.name}: python {value!r}, no such field in java")
            continue
        compare_value(value, java[name], f"{path}.{f.name}", diffs)
    extra = set(java) - seen
    if extra:
        diffs.append(f"{path}: java fields {sorted(extra)} missing in python {type(py).__name__}")


def _flat(partitions: Any) -> list[list[Any]]:
    return [[tp.topic, p] for tp in partitions for p in tp.partitions]


def compare_subscription(
    py: Subscription, java: dict[str, Any], member: dict[str, Any], path: str, diffs: list[str]
) -> None:
    compare_struct(py, {k: v for k, v in java.items() if k != "version"}, path, diffs)
    if py.version != java["version"]:
        diffs.append(f"{path}.version: python {py.version} != java {java['version']}")
    data = py.assignor_data
    if "sticky" in member:
        expected = member["sticky"]
        if data is None:
            actual: Any = {"partitions": [], "generation": None}
        elif isinstance(data, StickyUserData):
            actual = {"partitions": _flat(data.previous_assignment), "generation": data.generation}
        else:
            actual = f"unexpected {data!r}"
        if actual != expected:
            diffs.append(f"{path}.assignor_data: python {actual!r} != java sticky {expected!r}")
    elif "coop" in member:
        if not isinstance(data, CooperativeStickyUserData) or data.generation != member["coop"]:
            diffs.append(f"{path}.assignor_data: python {data!r} != java coop {member['coop']!r}")
    elif data is not None:
        diffs.append(f"{path}.assignor_data: python {data!r}, java has none")


def compare_member(
    py: MemberMetadata,
    java: dict[str, Any],
    proto: dict[str, Any] | None,
    path: str,
    diffs: list[str],
) -> None:
    skip = ("subscription", "assignment", "subscription_bytes", "assignment_bytes")
    compare_struct(py, java, path, diffs, skip=skip)
    for part in ("subscription", "assignment"):
        raw = java[part]
        decoded = getattr(py, part)
        raw_py = getattr(py, f"{part}_bytes")
        if proto is None or raw == "":
            if decoded is not None or raw_py is None or raw_py.hex() != raw:
                diffs.append(f"{path}.{part}: python raw {raw_py!r}/{decoded!r} != java {raw!r}")
            continue
        if decoded is None or raw_py is not None:
            diffs.append(f"{path}.{part}: python kept raw bytes, java decoded {proto[part]!r}")
            continue
        if part == "subscription":
            compare_subscription(decoded, proto[part], proto, f"{path}.{part}", diffs)
        else:
            compare_struct(
                decoded,
                {k: v for k, v in proto[part].items() if k != "version"},
                f"{path}.{part}",
                diffs,
            )
            if decoded.version != proto[part]["version"]:
                diffs.append(
                    f"{path}.{part}.version: {decoded.version} != {proto[part]['version']}"
                )


def compare_record(py: Any, record_type: int, view: dict[str, Any]) -> list[str]:
    """Differences between a Python record and Kafka's view of the same key/value."""
    diffs: list[str] = []
    key, value = view["key"], view["value"]
    if isinstance(py, Unknown):
        return [f"python Unknown ({py.reason}), java decoded it"]
    if getattr(py, "record_type", None) != record_type:
        diffs.append(f"record_type: python {getattr(py, 'record_type', None)} != {record_type}")
    if value is None:
        if isinstance(py, Tombstone):
            compare_struct(py.key, key, "key", diffs)
        elif isinstance(py, OffsetCommitTombstone | GroupMetadataTombstone):
            compare_struct(py, key, "record", diffs)
        else:
            diffs.append(f"python {type(py).__name__} for a tombstone")
        return diffs
    overlap = set(key) & set(value)
    assert not overlap, f"key and value share field names {overlap}"
    if py.value_version != view["valueVersion"]:
        diffs.append(f"value_version: python {py.value_version} != java {view['valueVersion']}")
    merged = {**key, **value}
    if isinstance(py, GroupMetadata):
        compare_struct(py, merged, "record", diffs, skip=("members",))
        members_java = merged["members"]
        if len(members_java) != len(py.members):
            diffs.append(f"members: python {len(py.members)} != java {len(members_java)}")
            return diffs
        protos = view.get("members")
        for i, (pm, jm) in enumerate(zip(py.members, members_java, strict=True)):
            proto = protos[i] if protos is not None else None
            compare_member(pm, jm, proto, f"record.members[{i}]", diffs)
        return diffs
    compare_struct(py, merged, "record", diffs)
    return diffs
