"""Which child processes this test process has, and whether they still run.

Linux ``/proc`` only (the CI machine); elsewhere nothing is found, so the
check in ``conftest.py`` passes vacuously. Not a conftest: plain functions.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def child_pids() -> set[int]:
    """Processes whose parent is this process."""
    children: set[int] = set()
    for path in Path(f"/proc/{os.getpid()}/task").glob("*/children"):
        with contextlib.suppress(OSError):  # the thread ended meanwhile
            children.update(int(pid) for pid in path.read_text().split())
    return children


def running(pid: int) -> bool:
    """Whether *pid* exists and has not exited (a zombie only waits to be reaped)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"
