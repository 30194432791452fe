"""The query's progress reports to the exporter: the job's own lag behind each source partition.

Spark's progress of a micro-batch names, per source, the offsets the batch read up to
(``endOffset``) and the latest offsets it saw (``latestOffset``), as JSON
(``{"topic": {"partition": offset}}``). :class:`ProgressListener` hands each report of the
job's query to a callback (:meth:`streaming.sinks.prometheus.PrometheusSink.record_progress`)
as ``(topic, partition, read_to, latest)`` tuples: the job's lag in records and, from the
history of latest offsets, in seconds.

The report crosses from the JVM as its JSON, one call (:class:`_JsonProgress`). pyspark's own
wrapper rebuilds it field by field, a Py4J call each (every state operator's and source's
metrics), and the JVM resolves each call's name by reflection, a class path search per miss:
a report per micro-batch makes that a steady share of the job's CPU on a live cluster.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any, ClassVar

from pyspark.sql.streaming.listener import StreamingQueryListener

__all__ = ["ProgressListener", "SourceOffsets", "source_offsets"]

#: ``(topic, partition, read_to, latest)`` of one source partition.
SourceOffsets = tuple[str, int, int, int]


def _offsets(given: object) -> dict[tuple[str, int], int]:
    """A source's offsets as a report gives them: parsed JSON, or its text."""
    parsed = given
    if isinstance(given, str):
        try:
            parsed = json.loads(given)
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


def source_offsets(sources: Iterable[tuple[object, object]]) -> list[SourceOffsets]:
    """Per source partition of a progress report's sources (``(endOffset, latestOffset)``,
    each parsed JSON or its text): the offset read up to and the latest offset; partitions
    without both are left out."""
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
        self._java: Any = None

    @property
    def _jlistener(self) -> Any:
        """What ``spark.streams.addListener`` registers: Spark's wrapper of a Python
        listener, around :class:`_JsonProgress` instead of pyspark's field-by-field one."""
        if self._java is None:
            from pyspark import SparkContext

            jvm = SparkContext._jvm
            assert jvm is not None, "no Spark session"
            self._java = jvm.PythonStreamingQueryListenerWrapper(_JsonProgress(self))
        return self._java

    def on_report(self, text: str) -> None:
        """A progress report as Spark's JSON (``StreamingQueryProgress.json``)."""
        report = json.loads(text)
        if report.get("name") != self.query_name:
            return
        ts_s = datetime.fromisoformat(report["timestamp"]).timestamp()
        offsets = source_offsets(
            (s.get("endOffset"), s.get("latestOffset")) for s in report.get("sources") or ()
        )
        if offsets:
            self.on_progress(ts_s, offsets)

    def onQueryStarted(self, event: Any) -> None:
        pass

    def onQueryProgress(self, event: Any) -> None:
        """pyspark's event (not the path Spark takes here: :meth:`on_report`)."""
        self.on_report(event.progress.json)

    def onQueryIdle(self, event: Any) -> None:
        pass

    def onQueryTerminated(self, event: Any) -> None:
        pass


class _JsonProgress:
    """Spark's Python listener interface (Py4J): each progress report handed on as its
    JSON, the other events ignored."""

    def __init__(self, listener: ProgressListener) -> None:
        self.listener = listener

    def onQueryStarted(self, jevent: Any) -> None:
        pass

    def onQueryProgress(self, jevent: Any) -> None:
        self.listener.on_report(jevent.progress().json())

    def onQueryIdle(self, jevent: Any) -> None:
        pass

    def onQueryTerminated(self, jevent: Any) -> None:
        pass

    class Java:
        implements: ClassVar = ["org.apache.spark.sql.streaming.PythonStreamingQueryListener"]
