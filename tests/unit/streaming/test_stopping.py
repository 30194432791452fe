"""What :func:`streaming.spark.stopping.interruption` hands Spark for an error of a batch the
stop interrupted: one short line of the form Spark's ``StreamExecution.isInterruptionException``
recognises, or None for an error that is not the stop's. (The real query stopped inside a batch
is :mod:`tests.spark.test_stopping`'s.)"""

from __future__ import annotations

import re
import threading

import pytest
from py4j.protocol import Py4JJavaError

from streaming.spark.stopping import BatchGuard, BatchInterrupted, interruption

pytestmark = pytest.mark.unit

#: Spark 4.2's ``StreamExecution.PROXY_ERROR``, the one it runs on a Python proxy's traceback.
PROXY_ERROR = re.compile(
    r"py4j.protocol.Py4JJavaError: An error occurred while calling((.|\r\n|\r|\n)*)"
    r"(java.lang.InterruptedException|java.io.InterruptedIOException"
    r"|java.nio.channels.ClosedByInterruptException)"
)
JOB_GROUP = "0b5c6e0e-8d1f-4a4a-9a57-0d4b5b1bd6f1"
STACK = "".join(f"\n\tat org.apache.spark.Frame{i}.run(Frame.scala:{i})" for i in range(400))


class Java:
    """A Java exception as py4j shows it: class, message, cause."""

    _target_id = "o42"

    def __init__(self, name: str, message: str | None, cause: Java | None = None) -> None:
        self.name, self.message, self.cause = name, message, cause

    def getClass(self) -> Java:
        return self

    def getName(self) -> str:
        return self.name

    def getMessage(self) -> str | None:
        return self.message

    def getCause(self) -> Java | None:
        return self.cause

    def equals(self, other: object) -> bool:
        return other is self

    def toString(self) -> str:
        return f"{self.name}: {self.message}{STACK}"


def error(java: Java) -> Py4JJavaError:
    return Py4JJavaError("An error occurred while calling o42.toArrow.\n", java)


def spark_group_cancelled(job: int) -> Java:
    return Java(
        "org.apache.spark.SparkException",
        f"Job {job} cancelled part of cancelled job group {JOB_GROUP}{STACK}",
    )


# 1. an interrupt anywhere in the cause chain: Spark's proxy form, the call and the class only
# 2. a Spark job of the query's group cancelled: the class, "cancelled" and the group id
# 3. another Java error, and a Python error: not the stop's
CASES = [
    (
        error(Java("java.lang.InterruptedException", None)),
        "py4j.protocol.Py4JJavaError: An error occurred while calling o42.toArrow: "
        "java.lang.InterruptedException",
    ),
    (
        error(
            Java(
                "org.apache.spark.SparkException",
                f"Exception thrown in awaitResult:{STACK}",
                Java("java.nio.channels.ClosedByInterruptException", None),
            )
        ),
        "py4j.protocol.Py4JJavaError: An error occurred while calling o42.toArrow: "
        "java.nio.channels.ClosedByInterruptException",
    ),
    (
        error(spark_group_cancelled(7)),
        f"org.apache.spark.SparkException: Job 7 cancelled part of cancelled job group {JOB_GROUP}",
    ),
    (error(Java("java.lang.IllegalStateException", f"table gone{STACK}")), None),
    (ValueError("not Java"), None),
]


@pytest.mark.parametrize(("exc", "expected"), CASES)
def test_interruption(exc: BaseException, expected: str | None) -> None:
    line = interruption(exc)
    assert line == expected
    if line is not None:
        assert len(line) < 300 and "\n" not in line
        interrupt = "cancelled" not in line
        assert bool(PROXY_ERROR.search(line)) is interrupt


def test_the_guard_turns_an_interrupt_into_one_line_only_after_its_stop() -> None:
    interrupted = error(Java("java.lang.InterruptedException", None))

    def batch(df: object, batch_id: int) -> None:
        raise interrupted

    guard = BatchGuard(batch)  # type: ignore[arg-type]
    with pytest.raises(Py4JJavaError):  # not stopping: Spark records it as it is
        guard(None, 3)  # type: ignore[arg-type]
    assert guard.failure is not None and guard.failure.startswith("batch 3: ")
    assert "java.lang.InterruptedException" in guard.failure
    guard = BatchGuard(batch)  # type: ignore[arg-type]
    guard.stop()
    with pytest.raises(BatchInterrupted, match=r"^batch 4 stopped: py4j\.protocol") as caught:
        guard(None, 4)  # type: ignore[arg-type]
    assert caught.value.__suppress_context__  # raised `from None`: no long chained traceback
    assert guard.failure is None


def test_the_guard_knows_the_batch_in_its_handler_and_waits_for_it() -> None:
    entered, release = threading.Event(), threading.Event()

    def batch(df: object, batch_id: int) -> None:
        entered.set()
        release.wait(10)
        if batch_id == 2:
            raise ValueError("bad batch")

    guard = BatchGuard(batch)  # type: ignore[arg-type]
    assert guard.wait_past(1, 0) and guard.running is None and guard.handled is None
    runner = threading.Thread(target=guard, args=(None, 1))
    runner.start()
    assert entered.wait(10)
    assert guard.running == 1
    assert not guard.wait_past(1, 0.05)  # still inside: the wait gives up at its bound
    assert guard.wait_past(0, 0)  # another batch: not waited for
    threading.Timer(0.1, release.set).start()
    assert guard.wait_past(1, 10)
    runner.join(10)
    assert (guard.running, guard.handled) == (None, 1)
    with pytest.raises(ValueError, match="bad batch"):  # a failed batch: idle, not handled
        guard(None, 2)  # type: ignore[arg-type]
    assert (guard.running, guard.handled) == (None, 1)
