"""The orphan check of conftest.py can fail: it sees a child that is left running."""

from __future__ import annotations

import subprocess
import sys

from process_check import child_pids, running


def test_a_running_child_is_seen_and_an_ended_one_is_not() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert child.pid in child_pids()
        assert running(child.pid)
    finally:
        child.kill()
    child.wait(timeout=10)
    assert child.pid not in child_pids()
    assert not running(child.pid)
