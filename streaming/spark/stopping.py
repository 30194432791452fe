"""The foreachBatch handler as the query calls it: a stop that lands inside a micro-batch
ends the query as stopped, and a failure Spark could not record is still known.

Spark tells a stop from a failure by the exception that ends the stream thread
(``StreamExecution.isInterruptionException``). An interrupt that reaches a Python
``foreachBatch`` function comes back to the JVM as a ``py4j.Py4JException`` whose message is
the Python traceback, and Spark matches that text with the regular expression
``py4j.protocol.Py4JJavaError: An error occurred while calling((.|\\r\\n|\\r|\\n)*)(<the
interrupt exceptions>)`` (SPARK-39218). Java's regex engine recurses once per character of
that group, and the traceback holds the whole Java stack of the interrupted call: with the
JVM's 1 MB thread stacks such a traceback is long enough for a ``StackOverflowError``, which
then escapes Spark's handler. The stream thread dies with ``Exception in
thread "stream execution thread ..." java.lang.StackOverflowError`` in the log, and the query
ends with no exception recorded, a stop and a failure alike.

:class:`BatchGuard` wraps the handler: once :meth:`BatchGuard.stop` was called, a batch
ended by an interrupt or a cancelled Spark job raises :class:`BatchInterrupted` instead, one
short line in the form Spark recognises, so the query ends as stopped (status ``Stopped``);
any other exception of a batch is kept (:attr:`BatchGuard.failure`) and re-raised as it is,
so a failure is reported even when Spark's own record of it is lost. It also knows which
batch is inside the handler (:attr:`BatchGuard.running`), so a stop can wait for that batch
rather than guess it from the query's progress reports, which lag the batches.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from streaming.errors import EXIT_FAILED, RebalanceMonitorError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["BatchGuard", "BatchInterrupted", "interruption"]

#: What Spark counts as an interrupt (``StreamExecution.IO_EXCEPTION_NAMES``).
INTERRUPTS = frozenset(
    {
        "java.lang.InterruptedException",
        "java.io.InterruptedIOException",
        "java.nio.channels.ClosedByInterruptException",
    }
)
#: The longest message kept of a Java exception (Spark's regex: one recursion per character).
_MAX_MESSAGE = 200
#: How far the cause chain is followed.
_MAX_CAUSES = 8


class BatchInterrupted(RebalanceMonitorError):
    """A micro-batch ended by the query's stop (one line, Spark's interrupt form); raised
    into Spark, never to a command line."""

    exit_status = EXIT_FAILED


def _first_line(text: object) -> str:
    return next((line.strip() for line in str(text).splitlines() if line.strip()), "")


def interruption(error: BaseException) -> str | None:
    """For a ``Py4JJavaError`` whose Java cause chain holds an interrupt or a cancelled Spark
    job: one short line Spark takes for a stop; None for any other error."""
    from py4j.protocol import Py4JJavaError

    if not isinstance(error, Py4JJavaError):
        return None
    call = _first_line(error.errmsg).removeprefix("An error occurred while calling ").rstrip(".")
    java: Any = error.java_exception
    for _ in range(_MAX_CAUSES):
        if java is None:
            break
        name = str(java.getClass().getName())
        message = _first_line(java.getMessage())[:_MAX_MESSAGE]
        if name in INTERRUPTS:
            return f"py4j.protocol.Py4JJavaError: An error occurred while calling {call}: {name}"
        if name == "org.apache.spark.SparkException" and "cancelled" in message:
            # Spark checks for this class, "cancelled" and the query's job group in the text
            return f"{name}: {message}"
        cause = java.getCause()
        java = None if cause is None or cause.equals(java) else cause
    return None


def _describe(error: BaseException) -> str:
    """The first line of a Java exception behind a ``Py4JJavaError`` (its own first line
    only names the call), else ``<class>: <first line>``."""
    from py4j.protocol import Py4JJavaError

    if isinstance(error, Py4JJavaError) and error.java_exception is not None:
        return _first_line(error.java_exception.toString())
    return f"{type(error).__name__}: {_first_line(error)}"


class BatchGuard:
    """``handler`` for ``foreachBatch`` (module docstring); :meth:`stop` before the query's."""

    def __init__(self, handler: Callable[[DataFrame, int], None]) -> None:
        self.handler = handler
        self._stopping = threading.Event()
        self._idle = threading.Condition()
        #: ``batch N: <first line>`` of the first batch that failed otherwise than by the stop
        self.failure: str | None = None
        #: The batch inside the handler now (None between batches)
        self.running: int | None = None
        #: The last batch whose handler returned without an error
        self.handled: int | None = None

    def stop(self) -> None:
        """From now on, an interrupted batch is the stop's doing."""
        self._stopping.set()

    def wait_past(self, batch_id: int, timeout_s: float) -> bool:
        """Until batch ``batch_id`` is out of the handler, at most ``timeout_s``; whether it
        is (a later batch may be in it by then)."""
        with self._idle:
            return self._idle.wait_for(lambda: self.running != batch_id, timeout_s)

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        with self._idle:
            self.running = batch_id
        try:
            self.handler(df, batch_id)
            self.handled = batch_id
        except Exception as exc:
            line = interruption(exc) if self._stopping.is_set() else None
            if line is not None:
                raise BatchInterrupted(f"batch {batch_id} stopped: {line}") from None
            if self.failure is None:
                self.failure = f"batch {batch_id}: {_describe(exc)}"
            raise
        finally:
            with self._idle:
                self.running = None
                self._idle.notify_all()
