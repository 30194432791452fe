"""The local session's JVM as :mod:`streaming.spark.session` launches it: the serial
collector, the heap of ``spark.driver.memory`` and its young generation
(``local_jvm_conf``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark]


def test_the_local_jvm_runs_the_serial_collector(spark: SparkSession) -> None:
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    management = jvm.java.lang.management.ManagementFactory
    collectors = {bean.getName() for bean in management.getGarbageCollectorMXBeans()}
    assert collectors == {"Copy", "MarkSweepCompact"}, collectors  # G1's: "G1 Young Generation"
    arguments = list(management.getRuntimeMXBean().getInputArguments())
    assert "-XX:+UseSerialGC" in arguments
    # the tests' session asks for 2g (tests/conftest.py); the heap's cap is about that
    max_heap = management.getMemoryMXBean().getHeapMemoryUsage().getMax()
    assert 1.8 * 2**30 < max_heap <= 2 * 2**30, max_heap
    # the young generation: a sixteenth of 2g (eden and both survivor spaces)
    young = 0
    for pool in management.getMemoryPoolMXBeans():
        if pool.getName() in ("Eden Space", "Survivor Space"):
            young += pool.getUsage().getMax() * (2 if pool.getName() == "Survivor Space" else 1)
    assert young == 128 * 2**20, young
