"""Shared helpers of the stdio tests: child environment, process and fd checks."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import trio

ROOT = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
PAPER_TRAIL = str(ROOT / "examples" / "paper_trail.py")
#: The spawned servers import this checkout's trio_mcp.
CHILD_ENV = {"PYTHONPATH": str(ROOT / "src")}


def open_fds() -> set[str]:
    """This process's open descriptors."""
    return set(os.listdir("/proc/self/fd"))


def gone(pid: int) -> bool:
    """True if *pid* no longer runs (absent, or a zombie some other parent must reap)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


async def wait_gone(pid: int) -> None:
    """Wait until *pid* (any process, not only our child) has exited.

    A pidfd becomes readable when the process exits, so this waits on an event
    from the kernel instead of polling.
    """
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        await trio.lowlevel.wait_readable(fd)
    finally:
        os.close(fd)


def reaped(pid: int) -> bool:
    """True if *pid* is gone and is not an unreaped child of ours (no zombie)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return not os.path.exists(f"/proc/{pid}")
    return False
