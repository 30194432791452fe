"""The job, unchanged, through ``spark-submit`` on a real Spark standalone cluster: a master
and two workers started from the pyspark package on 127.0.0.1 (one core, 1 GiB each).

``spark-submit --master spark://... --jars <the Spark jar set> streaming/job.py --once``
is what an operator runs on a cluster (``docs/operations.md``). The test asserts the run
ends cleanly, its tables hold the backlog's rebalances, both workers ran decode and
tracker tasks (their executor logs): the job ran distributed; and a ``spark-submit --conf``
of a key the job has a default for (``spark.sql.shuffle.partitions``) is what the query
ran with (the checkpoint's offset log, its state partitions).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from streaming.spark.session import spark_jars
from tests.conftest import free_ports

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from tests.spark.backlog import Backlog

pytestmark = [pytest.mark.spark, pytest.mark.integration, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]


@dataclass
class Cluster:
    master_url: str
    ui_url: str
    work_dirs: list[Path]
    env: dict[str, str]


def _spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def _json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=5) as resp:
        return json.loads(resp.read())


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    home = _spark_home()
    work = tmp_path_factory.mktemp("standalone")
    env = {
        **os.environ,
        "SPARK_HOME": str(home),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_DAEMON_MEMORY": "256m",
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
    }
    port, ui, *worker_uis = free_ports(4)
    spark_class = str(home / "bin" / "spark-class")
    procs: list[subprocess.Popen[bytes]] = []

    def daemon(name: str, *args: str) -> None:
        log = open(work / f"{name}.log", "wb")  # noqa: SIM115 - closed with the process
        procs.append(
            subprocess.Popen(
                [spark_class, *args], stdout=log, stderr=subprocess.STDOUT, env=env,
                start_new_session=True,
            )
        )  # fmt: skip

    master_url = f"spark://127.0.0.1:{port}"
    ui_url = f"http://127.0.0.1:{ui}"
    work_dirs = [work / "worker-1", work / "worker-2"]
    try:
        daemon(
            "master", "org.apache.spark.deploy.master.Master",
            "--host", "127.0.0.1", "--port", str(port), "--webui-port", str(ui),
        )  # fmt: skip
        for n, (folder, worker_ui) in enumerate(zip(work_dirs, worker_uis, strict=True), 1):
            folder.mkdir()
            daemon(
                f"worker-{n}", "org.apache.spark.deploy.worker.Worker",
                "--host", "127.0.0.1", "--webui-port", str(worker_ui),
                "--cores", "1", "--memory", "1g", "--work-dir", str(folder), master_url,
            )  # fmt: skip
        deadline = time.monotonic() + 120
        while True:
            with contextlib.suppress(OSError, ValueError):
                if _json(f"{ui_url}/json/").get("aliveworkers") == 2:
                    break
            if time.monotonic() > deadline:
                logs = "\n".join(p.read_text(errors="replace")[-2000:] for p in work.glob("*.log"))
                raise AssertionError(f"the standalone cluster did not come up:\n{logs}")
            time.sleep(1)
        yield Cluster(master_url, ui_url, work_dirs, env)
    finally:
        for proc in procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def test_spark_submit_runs_the_job_on_a_standalone_cluster(
    cluster: Cluster, spark: SparkSession, backlog: Backlog, tmp_path: Path
) -> None:
    jars = ",".join(str(j) for j in spark_jars())
    command = [
        str(_spark_home() / "bin" / "spark-submit"),
        "--master", cluster.master_url,
        "--deploy-mode", "client",
        "--jars", jars,
        "--conf", "spark.executor.memory=768m",
        "--conf", "spark.executor.cores=1",
        "--conf", "spark.cores.max=2",
        "--conf", "spark.driver.memory=1g",
        # spark-submit's settings win over the job's defaults (DEFAULT_CONF: 2)
        "--conf", "spark.sql.shuffle.partitions=3",
        str(REPO / "streaming" / "job.py"),
        "--once",
        "--bootstrap-server", backlog.bootstrap_servers,
        "--membership-topic", backlog.membership_topic,
        "--checkpoint-dir", str(tmp_path / "checkpoint"),
        "--delta-path", str(tmp_path / "delta"),
        "--metrics-port", "0",
    ]  # fmt: skip
    done = subprocess.run(
        command, capture_output=True, text=True, env=cluster.env, timeout=900, check=False
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-6000:]
    assert "[events] batch 0:" in done.stdout
    # the query ran with spark-submit's settings: the checkpoint's offset log records them
    _version, metadata, *_offsets = (
        (tmp_path / "checkpoint" / "events" / "offsets" / "0").read_text().splitlines()
    )
    assert json.loads(metadata)["conf"]["spark.sql.shuffle.partitions"] == "3"
    state = tmp_path / "checkpoint" / "events" / "state" / "0"
    assert sorted(p.name for p in state.iterdir() if p.name.isdigit()) == ["0", "1", "2"]

    # the rebalances of the backlog's groups are in Delta
    rows = (
        spark.read.format("delta")
        .load(str(tmp_path / "delta" / "rebalance_events"))
        .select("group_id", "generation_after")
        .collect()
    )
    seen = {(r.group_id, r.generation_after) for r in rows}
    for result in backlog.results.values():
        for step in result.steps:
            if step.stable is not None:
                assert (result.group_id, step.stable.generation) in seen

    # both workers ran executors of the application, and each executor ran tasks
    apps = _json(f"{cluster.ui_url}/json/")["completedapps"]
    assert any(app["name"] == "rebalance-monitor" for app in apps), apps
    for folder in cluster.work_dirs:
        logs = list(folder.glob("app-*/*/stderr"))
        assert logs, f"no executor ran on the worker of {folder}"
        assert any("Running task" in log.read_text(errors="replace") for log in logs), folder
