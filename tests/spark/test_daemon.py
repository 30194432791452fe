"""The job's worker daemon (``streaming.spark.daemon``) in the shared local session: the
workers load pyspark from the pip install, not from Spark's zips (bytecode cached, no zip
directory re-read per task), and the path rule keeps the zips whenever no install matches."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from streaming.spark.daemon import without_spark_zips

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

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
