"""The job's worker daemon (``streaming.spark.daemon``) in the shared local session: the
workers load pyspark from the pip install, not from Spark's zips (bytecode cached, no zip
directory re-read per task), the path rule keeps the zips whenever no install matches, and
the decode and the stateful step fork their workers from one daemon."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from streaming.spark.daemon import without_spark_zips
from tests.spark.test_bucket_state import run_once

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

pytestmark = [pytest.mark.spark]


def _worker_view(_: object) -> list[str]:
    import sys

    import pyspark

    return [pyspark.__file__ or "", *(p for p in sys.path if p.endswith((".zip", ".jar")))]


def test_the_workers_load_the_installed_pyspark(spark: SparkSession) -> None:
    import pyspark

    assert spark.conf.get("spark.python.daemon.module") == "streaming.spark.daemon"
    seen = spark.sparkContext.parallelize(range(4), 2).map(_worker_view).collect()
    for worker_pyspark, *zips in seen:
        assert worker_pyspark == pyspark.__file__  # not .../python/lib/pyspark.zip/...
        assert not [z for z in zips if "pyspark" in Path(z).parts[-4:-1]], zips
    # Spark puts its spark-core jar on the workers' path too (Java classes only)
    utils = spark.sparkContext._jvm.org.apache.spark.api.python.PythonUtils
    driver_jars = [p for p in utils.sparkPythonPath().split(":") if p.endswith(".jar")]
    assert driver_jars, "Spark no longer puts a jar on the workers' path: drop the rule"


def test_the_zips_stay_without_a_matching_install(tmp_path: Path) -> None:
    lib = tmp_path / "site" / "pyspark" / "python" / "lib"
    lib.mkdir(parents=True)
    zips = [str(lib / "pyspark.zip"), str(lib / "py4j-0.10.9.9-src.zip")]
    other = str(tmp_path / "elsewhere")
    # the install the zips came from is not on the path: keep them
    assert without_spark_zips([*zips, other]) == [*zips, other]
    # on the path, but no pyspark package there (only the zips' folder): keep them
    assert without_spark_zips([*zips, str(tmp_path / "site")]) == [*zips, str(tmp_path / "site")]
    (tmp_path / "site" / "pyspark" / "__init__.py").write_text("")
    assert without_spark_zips(["", *zips, str(tmp_path / "site"), "/x/y.zip"]) == [
        "",
        str(tmp_path / "site"),
        "/x/y.zip",
    ]


def test_sparks_jar_goes_with_the_zips(tmp_path: Path) -> None:
    site = tmp_path / "site"
    jar = str(site / "pyspark" / "jars" / "spark-core_2.13-4.2.0.jar")
    other_jar = str(tmp_path / "jars" / "mine.jar")
    # no pyspark package on the path: the jar may hold the only pyspark, keep it
    assert without_spark_zips([jar, str(site)]) == [jar, str(site)]
    (site / "pyspark").mkdir(parents=True)
    (site / "pyspark" / "__init__.py").write_text("")
    assert without_spark_zips(["", jar, str(site), other_jar]) == ["", str(site), other_jar]


def _daemons_processor() -> Any:
    """A stateful processor whose one row per key is the daemon of the key's input rows'
    worker (the map's) and of its own worker (the stateful step's)."""
    import os

    import pandas as pd
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor

    class Daemons(StatefulProcessor):
        def init(self, handle: Any) -> None:
            pass

        def handleInputRows(self, key: Any, rows: Any, timerValues: Any) -> Iterator[Any]:
            seen = {int(d) for frame in rows for d in frame["daemon"]}
            yield pd.DataFrame(
                {"k": [key[0]], "map_daemon": [min(seen)], "step_daemon": [os.getppid()]}
            )

        def close(self) -> None:
            pass

    return Daemons()


def _daemons(spark: SparkSession, inbox: Path, checkpoint: Path) -> list[tuple[int, int]]:
    """A query shaped like the job's (``mapInArrow``, then ``transformWithStateInPandas``
    after a shuffle) over ``inbox`` once: each key's (map daemon, step daemon)."""
    rows: list[tuple[int, int]] = []

    def with_daemon(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """Each row gets the pid of the daemon that forked the map's worker."""
        import os

        import pyarrow as pa

        for batch in batches:
            daemon = pa.array([os.getppid()] * batch.num_rows, pa.int64())
            yield batch.append_column("daemon", daemon)

    def collect(df: DataFrame, _batch_id: int) -> None:
        rows.extend((r["map_daemon"], r["step_daemon"]) for r in df.collect())

    stream = (
        spark.readStream.schema("k string, v long")
        .parquet(str(inbox))
        .mapInArrow(with_daemon, "k string, v long, daemon long")
        .groupBy("k")
        .transformWithStateInPandas(
            statefulProcessor=_daemons_processor(),
            outputStructType="k string, map_daemon long, step_daemon long",
            outputMode="Append",
            timeMode="None",
        )
    )
    run_once(stream, checkpoint, collect)
    return rows


def test_the_decode_and_the_stateful_step_share_one_daemon(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Spark keeps a worker daemon (and its idle workers) per set of worker environment
    variables; the map's runner adds ``SPARK_SIMPLIFIED_TRACEBACK`` where the stateful
    step's does not, so with simplified tracebacks on, a local job runs two daemons and twice
    the workers, each holding the job's modules (docs/operations.md). The session's default
    turns them off: one daemon, and the step's tasks reuse the decode's idle workers."""
    inbox = tmp_path / "inbox"
    spark.createDataFrame([(f"k{i}", i) for i in range(8)], "k string, v long").write.parquet(
        str(inbox)
    )
    key = "spark.sql.execution.pyspark.udf.simplifiedTraceback.enabled"
    assert spark.conf.get(key) == "false"
    shared = _daemons(spark, inbox, tmp_path / "one")
    assert len(shared) == 8
    assert {m for m, s in shared} == {s for m, s in shared}, shared
    spark.conf.set(key, "true")  # the setting is what makes them share
    try:
        apart = _daemons(spark, inbox, tmp_path / "two")
    finally:
        spark.conf.set(key, "false")
    assert len(apart) == 8
    assert not {m for m, s in apart} & {s for m, s in apart}, apart
