"""Starting a process that a test interrupts as a terminal's Ctrl-C would.

A CI runner that starts the suite as a background job of a non-interactive shell (`cmd &`,
nohup) hands it SIGINT ignored, and every process below inherits that: Python then installs
no KeyboardInterrupt handler, and a `migrate` the test sends SIGINT to goes on to the end as
if nothing came (issue 30: an apply --test run that "Fixed 6 findings" after its interrupt).
A process started from a terminal has SIGINT at its default; the tests start theirs so.
"""

from __future__ import annotations

import signal
from pathlib import Path


def _sigint_default() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


#: Popen keyword arguments for a process that a test sends SIGINT to.
AS_FROM_A_TERMINAL = {"preexec_fn": _sigint_default}


def running(pid: int) -> bool:
    """Alive and not a zombie (a container's init may never reap an orphaned process)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status
