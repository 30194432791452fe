"""The query's progress reports to the exporter: the job's own lag behind each source partition.

Spark's progress of a micro-batch names, per source, the offsets the batch read up to
(``endOffset``) and the latest offsets it saw (``latestOffset``), as JSON
(``{"topic": {"partition": offset}}``). :class:`ProgressListener` hands each report of the
job's query to a callback (:meth:`streaming.sinks.prometheus.PrometheusSink.record_progress`)
as ``(topic, partition, read_to, latest)`` tuples: the job's lag in records and, from the
history of latest offsets, in seconds.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from pyspark.sql.streaming.listener import StreamingQueryListener

__all__ = ["ProgressListener", "SourceOffsets", "source_offsets"]

#: ``(topic, partition, read_to, latest)`` of one source partition.
SourceOffsets = tuple[str, int, int, int]


def _offsets(text: str | None) -> dict[tuple[str, int], int]:
    if not text:
        return {}
    try:
        parsed = json.loads(text)
    except ValueError:
        return {}  # not a Kafka source's offsets
    if not isinstance(parsed, dict):
        return {}
    out: dict[tuple[str, int], int] = {}
    for topic, partitions in parsed.items():
        if isinstance(partitions, dict):
            for partition, offset in partitions.items():
                if isinstance(offset, int) and offset >= 0:
                    out[(str(topic), int(partition))] = offset
    return out


def source_offsets(sources: Iterable[tuple[str | None, str | None]]) -> list[SourceOffsets]:
    """Per source partition of a progress report's sources (``(endOffset, latestOffset)``
    JSON each): the offset read up to and the latest offset; partitions without both are
    left out."""
    out: list[SourceOffsets] = []
    for end_text, latest_text in sources:
        end, latest = _offsets(end_text), _offsets(latest_text)
        for (topic, partition), read_to in sorted(end.items()):
            if (topic, partition) in latest:
                out.append((topic, partition, read_to, latest[(topic, partition)]))
    return out


class ProgressListener(StreamingQueryListener):
    """Calls ``on_progress(ts_s, offsets)`` with each progress report of the query named
    ``query_name`` (Unix seconds of the report, :func:`source_offsets`)."""

    def __init__(
        self, query_name: str, on_progress: Callable[[float, list[SourceOffsets]], None]
    ) -> None:
        self.query_name = query_name
        self.on_progress = on_progress

    def onQueryStarted(self, event: Any) -> None:
        pass

    def onQueryProgress(self, event: Any) -> None:
        progress = event.progress
        if progress.name != self.query_name:
            return
        ts_s = datetime.fromisoformat(progress.timestamp).timestamp()
        offsets = source_offsets((s.endOffset, s.latestOffset) for s in progress.sources)
        if offsets:
            self.on_progress(ts_s, offsets)

    def onQueryIdle(self, event: Any) -> None:
        pass

    def onQueryTerminated(self, event: Any) -> None:
        pass
