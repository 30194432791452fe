"""The membership topic's settings, and their check on a topic that already exists.

The collector creates its topic bounded by construction (``docs/events.md`` *The topic*):

* ``cleanup.policy=compact``: the latest record per key survives (per group, per group's
  heartbeat, per cluster's end offsets), so the topic grows with the number of groups and
  topics, not with time, and a new checkpoint reads it in one bounded pass;
* ``compression.type=zstd``: the producer compresses each batch with zstd (the
  ``zstandard`` package); the broker keeps the batches as they come;
* ``segment.ms`` 1 h: only closed segments are compacted, so the active one rolls hourly
  instead of weekly;
* ``min.compaction.lag.ms`` 1 h: every record stays readable for at least an hour (a reader
  up to an hour behind loses nothing), ``max.compaction.lag.ms`` 1 day: a superseded record
  is gone within a day;
* ``delete.retention.ms`` 1 day: a tombstone (a group that disappeared) is kept a day.

A topic that exists with other values is used as it is: the collector never alters a topic,
it logs one warning naming each setting that differs (:func:`config_mismatches`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafka.admin import ConfigResource, ConfigResourceType

COMPRESSION = "zstd"

_HOUR_MS = 3_600_000
_DAY_MS = 24 * _HOUR_MS

#: The settings the collector creates its topic with (``docs/events.md`` *The topic*).
TOPIC_CONFIGS: Mapping[str, str] = {
    "cleanup.policy": "compact",
    "compression.type": COMPRESSION,
    "segment.ms": str(_HOUR_MS),
    "min.compaction.lag.ms": str(_HOUR_MS),
    "max.compaction.lag.ms": str(_DAY_MS),
    "delete.retention.ms": str(_DAY_MS),
}

#: Values a topic may have instead of ours and still be bounded and compressed as needed:
#: ``compact,delete`` also compacts; ``producer`` keeps the producer's zstd batches.
_ALSO_FINE: Mapping[str, frozenset[str]] = {
    "cleanup.policy": frozenset({"compact,delete", "delete,compact"}),
    "compression.type": frozenset({"producer"}),
}


def config_mismatches(actual: Mapping[str, str | None]) -> list[str]:
    """``"key=actual (the collector creates its topic with key=wanted)"`` for each of
    :data:`TOPIC_CONFIGS` the topic's ``actual`` settings differ from (a missing key counts
    as different); empty when the topic is as the collector would create it."""
    out: list[str] = []
    for key, wanted in TOPIC_CONFIGS.items():
        value = actual.get(key)
        if value == wanted or value in _ALSO_FINE.get(key, frozenset()):
            continue
        out.append(f"{key}={value if value is not None else '(unknown)'} (wanted {wanted})")
    return out


def describe_topic_configs(admin: Any, topic: str) -> dict[str, str | None]:
    """The topic's settings in effect (DescribeConfigs of the topic, all values)."""
    resource = ConfigResource(ConfigResourceType.TOPIC, topic, configs=list(TOPIC_CONFIGS))
    answer = admin.describe_configs([resource], config_filter="all").get("topic", {})
    configs: Mapping[str, Any] = answer.get(topic, {})
    return {
        str(k): (None if v.get("value") is None else str(v["value"])) for k, v in configs.items()
    }
