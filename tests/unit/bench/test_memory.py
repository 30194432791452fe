"""bench/stream.py's ``Memory``: forked workers' shared pages are summed once per worker
as RSS, and once in all as the tree's PSS total (what a container's limit charges)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from types import ModuleType

import pytest

pytestmark = pytest.mark.unit

MIB = 1024**2

# a "daemon" touches 200 MiB, then forks two "workers" that keep them (copy-on-write,
# shared) and sleep; it prints a line once both are up
DAEMON = """
import os, sys, time
block = bytearray(os.urandom(200 * 1024 * 1024))
for _ in range(2):
    if os.fork() == 0:
        time.sleep(60)
        os._exit(0)
time.sleep(1)
print("up", flush=True)
time.sleep(60)
"""


def test_forked_workers_shared_pages_count_once_in_the_total(stream: ModuleType) -> None:
    # the "driver" is a shell whose child is the daemon, as the JVM is the driver's child
    driver = subprocess.Popen(
        ["/bin/sh", "-c", f"{sys.executable} -c '{DAEMON}'"],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert driver.stdout is not None
        assert driver.stdout.readline().strip() == "up"
        memory = stream.Memory()
        for _ in range(stream.Memory.pss_every):
            memory.sample(driver.pid)
            time.sleep(0.05)
    finally:
        os.killpg(driver.pid, signal.SIGKILL)  # the daemon and its workers too
        driver.wait()
    # the daemon and its two workers: each resident with the 200 MiB
    assert memory.workers >= 3 * 200 * MIB
    # all at once with each page once: the 200 MiB once, not three times
    assert 200 * MIB <= memory.total < memory.workers - 300 * MIB
