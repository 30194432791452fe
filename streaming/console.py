"""What the commands show a person on a terminal: what they are waiting for, and for how long.

The ``demo``, ``run`` and ``audit`` commands start Spark, which takes seconds to minutes on a
busy machine. :func:`waiting` says what is under way: on a terminal a spinner with the
time elapsed (``rich``), redrawn in place and gone when the step is done; elsewhere (a pipe,
a log file) one plain line when the step starts, or nothing (``quiet_when_piped``), so
captured output stays line-oriented.

The JVM's own output never reaches the terminal: :func:`streaming.spark.session.launch_jvm`
sends it to the command's log file.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import TextIO

__all__ = ["Step", "is_terminal", "waiting"]

#: Changes the text beside the spinner (a no-op when not on a terminal).
Step = Callable[[str], None]


@contextlib.contextmanager
def waiting(
    text: str, *, stream: TextIO | None = None, quiet_when_piped: bool = False
) -> Iterator[Step]:
    """While the block runs: ``text…`` with a spinner and the time elapsed on ``stream``
    (default stderr) when it is a terminal; else ``text…`` once as a line, or nothing with
    ``quiet_when_piped``. Yields a function that changes the text."""
    out = sys.stderr if stream is None else stream
    if not is_terminal(out):
        if not quiet_when_piped:
            print(f"{text}…", file=out, flush=True)
        yield lambda _text: None
        return
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    progress = Progress(
        SpinnerColumn(),
        TextColumn("{task.description}…"),
        TimeElapsedColumn(),
        console=Console(file=out, highlight=False),
        transient=True,
        redirect_stdout=False,
        redirect_stderr=False,
    )
    with progress:
        task = progress.add_task(text, total=None)
        yield lambda new: progress.update(task, description=new)


def is_terminal(stream: TextIO) -> bool:
    """Whether ``stream`` is a terminal (False for a closed or fake stream)."""
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or fake stream
        return False
