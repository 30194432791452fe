"""A command on a pseudo-terminal, as a person runs it: ``ROWS`` x ``COLUMNS``, ``TERM`` set,
the terminal its controlling one (Ctrl-C there interrupts its whole process group); everything
it prints is read until it exits, and a callback sees the latest screenful as it comes (to act
while the command runs, or to press Ctrl-C)."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import termios
from collections.abc import Callable, Sequence

__all__ = ["COLUMNS", "ESCAPE", "ROWS", "on_terminal"]

ROWS, COLUMNS = 50, 220
#: Terminal control sequences and carriage returns (a redrawn table, a spinner).
ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Z0-9]|\r")


def on_terminal(
    command: Sequence[str], on_output: Callable[[str], bool | None], *, wait_s: float = 120
) -> tuple[int, str]:
    """Run ``command`` on a pseudo-terminal until it exits; ``on_output`` gets the last
    20,000 characters printed (without control sequences) after each read, and presses
    Ctrl-C (once) by returning True. Returns the exit status and the whole output without
    control sequences."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": str(COLUMNS)}
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen(
        command,
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        start_new_session=True,
        # the terminal becomes the session's controlling one: its Ctrl-C is a SIGINT to the
        # foreground process group (the command and every child it did not move out)
        preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0),
    )
    os.close(slave)
    raw = b""
    interrupted = False
    try:
        while True:
            ready, _, _ = select.select([master], [], [], 5)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the command closed the terminal (exited)
                break
            if not chunk:
                break
            raw += chunk
            if on_output(ESCAPE.sub("", raw[-20_000:].decode(errors="replace"))) and not (
                interrupted
            ):
                os.write(master, b"\x03")  # Ctrl-C, through the terminal's line discipline
                interrupted = True
        proc.wait(timeout=wait_s)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, ESCAPE.sub("", raw.decode("utf-8", errors="replace"))
