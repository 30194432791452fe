"""``jvm/localfs`` in the job's local sessions: Hadoop's local file system, with permissions
and link checks done by ``java.nio`` instead of a ``chmod``/``readlink`` process per file
(``streaming.spark.session.LOCAL_FS_CONF``). Checked through the shared session's JVM."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from streaming.spark.session import LOCAL_FS_CONF

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark]


def _hadoop(spark: SparkSession) -> tuple[Any, Any]:
    return spark._jvm.org.apache.hadoop, spark._jsc.hadoopConfiguration()  # type: ignore[attr-defined]


def _local_fs(spark: SparkSession) -> Any:
    hadoop, conf = _hadoop(spark)
    return hadoop.fs.FileSystem.getLocal(conf)


def test_local_sessions_use_the_nio_file_systems(spark: SparkSession) -> None:
    hadoop, conf = _hadoop(spark)
    file_system = hadoop.fs.FileSystem.get(spark._jvm.java.net.URI("file:///"), conf)  # type: ignore[attr-defined]
    context = hadoop.fs.FileContext.getLocalFSFileContext(conf).getDefaultFileSystem()
    assert file_system.getClass().getName() == LOCAL_FS_CONF["spark.hadoop.fs.file.impl"]
    assert (
        context.getClass().getName()
        == LOCAL_FS_CONF["spark.hadoop.fs.AbstractFileSystem.file.impl"]
    )


def test_created_files_get_the_permission_asked_for(spark: SparkSession, tmp_path: Path) -> None:
    hadoop, _conf = _hadoop(spark)
    fs = _local_fs(spark)
    target = tmp_path / "data.bin"
    path = hadoop.fs.Path(target.as_uri())
    out = fs.create(path, hadoop.fs.permission.FsPermission(0o640), True, 4096, 1, 1 << 20, None)
    out.write(b"abc")
    out.close()
    assert target.read_bytes() == b"abc"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    fs.setPermission(path, hadoop.fs.permission.FsPermission(0o751))
    assert stat.S_IMODE(target.stat().st_mode) == 0o751
    assert fs.getFileStatus(path).getPermission().toShort() == 0o751


def test_renames_through_file_context_as_the_checkpoint_logs_do(
    spark: SparkSession, tmp_path: Path
) -> None:
    hadoop, conf = _hadoop(spark)
    context = hadoop.fs.FileContext.getLocalFSFileContext(conf)
    (tmp_path / "tmp-0").write_bytes(b"offsets")
    src, dst = (
        hadoop.fs.Path((tmp_path / "tmp-0").as_uri()),
        hadoop.fs.Path((tmp_path / "0").as_uri()),
    )
    no_options = spark.sparkContext._gateway.new_array(getattr(hadoop.fs, "Options$Rename"), 0)
    context.rename(src, dst, no_options)
    assert not (tmp_path / "tmp-0").exists()
    assert (tmp_path / "0").read_bytes() == b"offsets"


def test_link_status_answers_as_hadoops_own(spark: SparkSession, tmp_path: Path) -> None:
    from py4j.protocol import Py4JJavaError

    hadoop, conf = _hadoop(spark)
    ours = _local_fs(spark)
    theirs = hadoop.fs.RawLocalFileSystem()
    theirs.initialize(spark._jvm.java.net.URI("file:///"), conf)  # type: ignore[attr-defined]
    (tmp_path / "file").write_bytes(b"12345")
    (tmp_path / "dir").mkdir()
    os.symlink(tmp_path / "file", tmp_path / "link")

    def status(fs: Any, name: str) -> tuple[Any, ...]:
        st = fs.getFileLinkStatus(hadoop.fs.Path((tmp_path / name).as_uri()))
        return (st.isFile(), st.isDirectory(), st.isSymlink(), st.getLen())

    for name in ("file", "dir", "link"):
        assert status(ours, name) == status(theirs, name), name
    assert status(ours, "file") == (True, False, False, 5)
    for fs in (ours, theirs):
        with pytest.raises(Py4JJavaError, match="FileNotFoundException"):
            status(fs, "missing")
