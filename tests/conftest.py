"""Test rules for trio_mcp (read before adding a test).

* Everything timed runs on Trio's ``autojump_clock`` fixture: a 60 s timeout
  takes no real time, and times read from records are exact.
* Never sleep to order events. Use ``trio.testing.wait_all_tasks_blocked()`` to
  reach "every task is now waiting", or ``trio.testing.Sequencer`` to force an
  order.
* Network tests use loopback addresses only, and port 0.
* ``@pytest.mark.spec("ID")`` ties a test to a requirement listed in
  ``spec_notes/``; ``tests/test_spec_notes.py`` fails on unknown ids and on notes
  that name tests which do not exist.
* Pure protocol tests (``tests/protocol/``) never import trio.
* Every test ends every process it started: an autouse check below fails a
  test that leaves a child process running.
* Every test starts with no remembered era (``forget_eras``): a port reused by a
  later test's server must not inherit what an earlier one spoke.
* Property tests (hypothesis) are deterministic too: the profile below draws
  the same examples on every run (``derandomize``), keeps no example database,
  and has no per-example deadline (a loaded 2-core CI machine is not a bug).
"""

from collections.abc import Iterator

import pytest
from hypothesis import settings
from process_check import child_pids, running

from trio_mcp._client._connect import forget_eras

settings.register_profile("trio_mcp", deadline=None, derandomize=True, database=None)
settings.load_profile("trio_mcp")


@pytest.fixture(autouse=True)
def _no_remembered_eras() -> None:
    """The era memory of stdio commands and HTTP endpoints is process-wide."""
    forget_eras()


@pytest.fixture(autouse=True)
def _no_orphaned_processes() -> Iterator[None]:
    """Every test ends every process it started (reliability T-08; the brief's
    orphaned servers): a child still running after the test is a failure."""
    before = child_pids()
    yield
    left = sorted(pid for pid in child_pids() - before if running(pid))
    assert not left, f"processes left running by this test: {left}"
