"""Readers of on-disk formats older versions wrote, each with the version that removes it.

=======================  ==========================================  ==============
What                     Reader                                      Removed in
=======================  ==========================================  ==============
remote checkpoint        :func:`derived_app_id`: the Delta app id    0.3.0
without ``app-id``       derived from the checkpoint's path
stateful checkpoint      :func:`unrecorded_layout`: the buckets the  0.3.0
without its layout file  query ran with before they were recorded
group states as a        :func:`moved_map_state`: each group's       0.3.0
MapState entry each      entry, moved into its bucket's value
a bucket's value plain   :func:`bucket_map`: the map as it was       0.3.0
or zlib-compressed       stored
a group's state as JSON  :func:`json_group_state`                    0.3.0
=======================  ==========================================  ==============

A reader that finds an old format records the current one where it can, so one run of a
version that still has the reader upgrades a checkpoint for good.
"""

from __future__ import annotations

import zlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from streaming.tracking.state import GroupState

__all__ = [
    "GROUP_KEY_SCHEMA",
    "LEGACY_BUCKETS",
    "MAP_STATE",
    "MAP_STATE_SCHEMA",
    "bucket_map",
    "derived_app_id",
    "json_group_state",
    "moved_map_state",
    "unrecorded_layout",
]

#: Buckets of a stateful checkpoint written before the number was recorded.
LEGACY_BUCKETS = 64
#: The state layout before buckets' values: a MapState entry per group (group id ->
#: GroupState JSON). Still declared by the processor, so that a checkpoint written with it
#: is read (:func:`moved_map_state`).
MAP_STATE = "groups"
MAP_STATE_SCHEMA = "state string"
GROUP_KEY_SCHEMA = "group_id string"


def derived_app_id(checkpoint_dir: str, ran: bool) -> str | None:
    """The Delta app id versions before 0.2.0 used for a checkpoint on a remote file system
    (a URI other than ``file:``): ``rebalance-monitor:<checkpoint URI>``, for a checkpoint
    whose query already ran (``ran``: it has an ``offsets`` log), so its tables'
    transactions still match (:func:`streaming.spark.checkpoint.app_id` records it in the
    checkpoint's ``app-id``).
    None for a local or new checkpoint, which gets a fresh id. Removed in 0.3.0: run 0.2.x on
    such a checkpoint once before upgrading past it."""
    remote = "://" in checkpoint_dir and not checkpoint_dir.startswith("file:")
    if not remote or not ran:
        return None
    return f"rebalance-monitor:{checkpoint_dir}"


def unrecorded_layout() -> dict[str, Any]:
    """The layout record of a stateful checkpoint whose query ran before layouts were
    recorded: :data:`LEGACY_BUCKETS` buckets under their plain names. Written into the
    checkpoint when found (:func:`streaming.spark.buckets.checkpoint_keys`), so the next
    start reads the record. Removed in 0.3.0."""
    return {"buckets": LEGACY_BUCKETS}


def moved_map_state(entries: Any) -> dict[str, bytes]:
    """The group states of a bucket's MapState :data:`MAP_STATE` (``entries``: the state
    variable; group id -> GroupState JSON), cleared: the bucket keeps them in its value from
    then on (:func:`streaming.spark.buckets.load_bucket`). Removed in 0.3.0."""
    if not entries.exists():
        return {}
    moved = {group_id: text.encode() for (group_id,), (text,) in entries.iterator()}
    entries.clear()
    return moved


def bucket_map(blob: bytes | bytearray) -> bytes | bytearray:
    """A bucket's value stored before buckets were zstd-compressed, as msgpack: decompressed
    from zlib, or as it is when it was stored plain (a zlib stream starts with ``0x78``,
    which no msgpack map does). Raises ``zlib.error`` for a value that starts like zlib and
    is not. Removed in 0.3.0."""
    return zlib.decompress(blob) if blob[:1] == b"\x78" else blob


def json_group_state(blob: bytes) -> GroupState | None:
    """A group's state stored as JSON (:meth:`~streaming.tracking.state.GroupState.to_json`,
    before states were msgpack: a JSON object starts with ``{``, which no msgpack map does);
    None for any other bytes. Removed in 0.3.0."""
    if blob[:1] != b"{":
        return None
    from streaming.tracking.state import GroupState

    return GroupState.from_json(blob)
