"""Which sessions get ``jvm/localfs`` and the serial collector
(``streaming.spark.session.local_fs_conf``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from streaming.spark.session import (
    LOCAL_BIND_CONF,
    LOCAL_FS_CONF,
    LOCAL_FS_JAR,
    LOCAL_JVM_OPTIONS,
    SparkSetupError,
    local_fs_conf,
    local_jvm_conf,
)

pytestmark = pytest.mark.unit


@pytest.fixture
def jars_dir(tmp_path: Path) -> Path:
    jar = tmp_path / LOCAL_FS_JAR
    jar.parent.mkdir(parents=True)
    jar.write_bytes(b"PK")
    return tmp_path / "spark"


@pytest.mark.parametrize("master", ["local", "local[*]", "local[2]"])
def test_local_masters_get_the_nio_file_systems(jars_dir: Path, master: str) -> None:
    conf = local_fs_conf(master, {}, jars_dir)
    assert conf == {
        **LOCAL_FS_CONF,
        "spark.driver.extraJavaOptions": (
            "-XX:+UseSerialGC -XX:MinHeapFreeRatio=10 -XX:MaxHeapFreeRatio=20"
            " -XX:MaxMetaspaceSize=512m -XX:ReservedCodeCacheSize=240m -Xmn64m"
        ),
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.driver.host": "127.0.0.1",
        "spark.driver.extraClassPath": str(jars_dir.parent / LOCAL_FS_JAR),
    }


@pytest.mark.parametrize("master", [None, "spark://127.0.0.1:7077", "local-cluster[2,1,1024]"])
def test_other_masters_keep_hadoops(jars_dir: Path, master: str | None) -> None:
    # executors in other JVMs would not have the jar on their class path
    assert local_fs_conf(master, {}, jars_dir) == {}


def test_the_users_settings_win_and_their_class_path_is_kept(jars_dir: Path) -> None:
    user = {
        "spark.hadoop.fs.file.impl": "org.apache.hadoop.fs.LocalFileSystem",
        "spark.driver.extraClassPath": "/opt/extra.jar",
    }
    added = local_fs_conf("local[*]", user, jars_dir)
    assert "spark.hadoop.fs.file.impl" not in added  # the user's own stays
    others = {k: v for k, v in LOCAL_FS_CONF.items() if k != "spark.hadoop.fs.file.impl"}
    assert others.items() <= added.items()
    conf = {**user, **added}  # as build_session merges them
    assert conf["spark.hadoop.fs.file.impl"] == "org.apache.hadoop.fs.LocalFileSystem"
    jar = str(jars_dir.parent / LOCAL_FS_JAR)
    assert conf["spark.driver.extraClassPath"] == f"{jar}{os.pathsep}/opt/extra.jar"


def test_a_users_bind_address_wins(jars_dir: Path) -> None:
    added = local_fs_conf("local[*]", {"spark.driver.bindAddress": "0.0.0.0"}, jars_dir)
    assert "spark.driver.bindAddress" not in added
    assert added["spark.driver.host"] == LOCAL_BIND_CONF["spark.driver.host"] == "127.0.0.1"


def test_a_users_java_options_replace_the_collector(jars_dir: Path) -> None:
    assert local_fs_conf("local[*]", {}, jars_dir).items() >= local_jvm_conf("1g").items()
    user = {"spark.driver.extraJavaOptions": "-XX:+UseG1GC -Xss2m"}
    assert "spark.driver.extraJavaOptions" not in local_fs_conf("local[*]", user, jars_dir)


@pytest.mark.parametrize(
    ("memory", "young"),
    [
        ("1g", "-Xmn64m"),
        ("2g", "-Xmn128m"),
        ("4G", "-Xmn256m"),
        ("1536m", "-Xmn96m"),
        ("768", "-Xmn48m"),
        ("1gb", "-Xmn64m"),
        ("200m", "-Xmn16m"),
    ],
)
def test_the_young_generation_is_a_sixteenth_of_the_users_heap(
    jars_dir: Path, memory: str, young: str
) -> None:
    options = local_fs_conf("local[*]", {"spark.driver.memory": memory}, jars_dir)[
        "spark.driver.extraJavaOptions"
    ].split()
    assert options == [*LOCAL_JVM_OPTIONS, young]


def test_a_heap_size_that_does_not_parse_leaves_the_young_generation_to_the_jvm() -> None:
    options = local_jvm_conf("lots")["spark.driver.extraJavaOptions"].split()
    assert options == list(LOCAL_JVM_OPTIONS)


def test_a_missing_jar_says_how_to_build_it(tmp_path: Path) -> None:
    with pytest.raises(SparkSetupError, match="make setup"):
        local_fs_conf("local[*]", {}, tmp_path / "spark")
