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
  test that leaves a child process running (a session fixture's server, such
  as the Redis one of ``redis_server.py``, is known to outlive each test).
* Every test starts with no remembered era (``forget_eras``): a port reused by a
  later test's server must not inherit what an earlier one spoke.
* Property tests (hypothesis) are deterministic too: the profile below draws
  the same examples on every run (``derandomize``), keeps no example database,
  and has no per-example deadline (a loaded 2-core CI machine is not a bug).
"""

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings
from process_check import child_pids, running
from redis_server import MISSING, SKIP_VARIABLE, redis_binary, running_redis, session_pids

from trio_mcp._client._connect import forget_eras

# The transport tests live in one folder per transport (tests/transports/http,
# stdio, websocket) and share the helpers of tests/transports/ (http_helpers,
# stdio_helpers): pytest's default import mode puts only a test's own folder on
# sys.path, so the shared folder is put there once, here.
sys.path.insert(0, str(Path(__file__).resolve().parent / "transports"))

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
    left = sorted(pid for pid in child_pids() - before - session_pids() if running(pid))
    assert not left, f"processes left running by this test: {left}"


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real ``redis-server`` for the whole session (``redis_server.py``), on a
    unix socket: its URL. Missing binary: the test fails naming
    ``apt-get install redis-server``, or is skipped if ``TRIO_MCP_SKIP_REDIS=1``."""
    if redis_binary() is None:
        if os.environ.get(SKIP_VARIABLE) == "1":
            pytest.skip(MISSING)
        pytest.fail(MISSING)
    # mktemp's directory is short enough for a unix socket's path (108 bytes).
    with running_redis(tmp_path_factory.mktemp("redis")) as url:
        yield url
