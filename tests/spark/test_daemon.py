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

    return [pyspark.__file__ or "", *(p for p in sys.path if p.endswith(".zip"))]


def test_the_workers_load_the_installed_pyspark(spark: SparkSession) -> None:
    import pyspark

    assert spark.conf.get("spark.python.daemon.module") == "streaming.spark.daemon"
    seen = spark.sparkContext.parallelize(range(4), 2).map(_worker_view).collect()
    for worker_pyspark, *zips in seen:
        assert worker_pyspark == pyspark.__file__  # not .../python/lib/pyspark.zip/...
        assert not [z for z in zips if "pyspark" in Path(z).parts[-4:-1]], zips


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
