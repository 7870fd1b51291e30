"""The pre-spawn hook of the stdio client (reliability catalogue X-03).

``before_spawn`` sees the exact argv, working directory and environment before
any process exists, and a veto (an exception) means nothing is started. The
child of each test would create a marker file as its very first act, so "no
process ran" is checked on the file system as well as on ``open_process``.
Every test is bounded by ``trio.fail_after`` and its processes are reaped by the
code under test (checked by pid).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing
from stdio_helpers import CHILD_ENV, PAPER_TRAIL, PYTHON, open_fds, reaped

from trio_mcp import open_stdio_client
from trio_mcp.transports import ProcessEvent, SpawnRequest, StdioProcess, open_stdio_process

# The child's first act is to create the marker; then it reports what it got.
REPORT = """\
import json, os, sys
open(sys.argv[1], "x").close()
print(json.dumps({"argv": sys.argv[1:], "env": dict(os.environ), "cwd": os.getcwd()}),
      file=sys.stderr, flush=True)
"""
# No locale coercion (PEP 538), so the child's os.environ is exactly what it was given.
EXACT_ENV = {"PYTHONCOERCECLOCALE": "0"}


class Veto(Exception):
    """What a policy hook raises to refuse a command."""


class CountingSpawner:
    """Wraps ``trio.lowlevel.open_process`` to count real spawn attempts."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        self._real = trio.lowlevel.open_process
        monkeypatch.setattr(trio.lowlevel, "open_process", self)

    async def __call__(self, *args: Any, **kwargs: Any) -> trio.Process:
        self.calls += 1
        return await self._real(*args, **kwargs)


@pytest.mark.spec("X-03")
async def test_hook_sees_exact_argv_env_and_cwd_before_the_process_exists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRIO_MCP_TEST_SECRET", "hunter2")
    marker = tmp_path / "ran"
    workdir = tmp_path / "work"
    workdir.mkdir()
    # Shell metacharacters and a leading dash reach the hook (and the child) verbatim.
    tricky = [str(marker), "a b; echo $(id)", "`x`", "-rf", "line\nbreak"]
    seen: list[SpawnRequest] = []
    events: list[ProcessEvent] = []

    def hook(request: SpawnRequest) -> None:
        assert not marker.exists()  # nothing has run yet
        assert events == []  # "spawned" comes after the hook
        seen.append(request)

    with trio.fail_after(20):
        async with open_stdio_process(
            PYTHON,
            ["-c", REPORT, *tricky],
            env={**EXACT_ENV, "EXTRA": "1"},
            cwd=workdir,
            stderr=None,
            on_event=events.append,
            before_spawn=hook,
        ) as transport:
            with pytest.raises(trio.EndOfChannel):
                await transport.receive()
    [request] = seen
    assert request.argv == (PYTHON, "-c", REPORT, *tricky)
    assert request.cwd == str(workdir)
    assert request.env["EXTRA"] == "1"
    assert "TRIO_MCP_TEST_SECRET" not in request.env  # the safe default
    # What the hook saw is exactly what the child got.
    report = json.loads(transport.stderr_lines[0])
    assert report["argv"] == tricky
    assert report["env"] == dict(request.env)
    assert await trio.Path(report["cwd"]).samefile(workdir)
    assert marker.exists()
    assert [e.kind for e in events] == ["spawned", "stdin_closed", "exited"]
    assert reaped(transport.pid)


@pytest.mark.spec("X-03")
def test_the_request_is_read_only() -> None:
    request = SpawnRequest(("server",), {"PATH": "/usr/bin"}, None)
    with pytest.raises(TypeError):
        request.env["LD_PRELOAD"] = "evil.so"  # type: ignore[index]
    with pytest.raises(AttributeError):
        request.argv = ("other",)  # type: ignore[misc]
    # The caller's mapping is copied: changing it later changes nothing.
    env = {"PATH": "/usr/bin"}
    request = SpawnRequest(("server",), env, None)
    env["PATH"] = "/tmp"
    assert request.env["PATH"] == "/usr/bin"


@pytest.mark.spec("X-03")
async def test_a_raising_hook_prevents_the_spawn_and_its_exception_comes_out_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spawner = CountingSpawner(monkeypatch)
    marker = tmp_path / "ran"
    events: list[ProcessEvent] = []
    refusal = Veto("the user declined")

    def hook(request: SpawnRequest) -> None:
        raise refusal

    before = open_fds()
    with trio.fail_after(20), pytest.raises(Veto) as info:
        async with open_stdio_client(
            PYTHON,
            ["-c", REPORT, str(marker)],
            env=EXACT_ENV,
            on_event=events.append,
            before_spawn=hook,
        ):
            pytest.fail("the block must not run")  # pragma: no cover
    assert info.value is refusal  # not wrapped in a group, not re-raised as another type
    assert spawner.calls == 0
    assert events == []
    assert not marker.exists()
    assert open_fds() == before


@pytest.mark.spec("X-03")
async def test_an_approving_hook_lets_the_same_command_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The control for the veto test: with a hook that returns, the marker appears.
    spawner = CountingSpawner(monkeypatch)
    marker = tmp_path / "ran"
    calls: list[tuple[str, ...]] = []
    with trio.fail_after(20):
        async with open_stdio_process(
            PYTHON,
            ["-c", REPORT, str(marker)],
            env=EXACT_ENV,
            stderr=None,
            before_spawn=lambda request: calls.append(request.argv),
        ) as transport:
            with pytest.raises(trio.EndOfChannel):
                await transport.receive()
    assert calls == [(PYTHON, "-c", REPORT, str(marker))]
    assert spawner.calls == 1
    assert marker.exists()
    assert reaped(transport.pid)


@pytest.mark.spec("X-03")
async def test_async_hook_waits_for_consent_then_the_session_works(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    spawner = CountingSpawner(monkeypatch)
    consent = trio.Event()
    asked: list[SpawnRequest] = []

    async def ask_the_user(request: SpawnRequest) -> None:
        asked.append(request)
        await consent.wait()

    async with trio.open_nursery() as nursery:

        async def run_client() -> None:
            with trio.fail_after(20):
                async with open_stdio_client(
                    PYTHON, [PAPER_TRAIL], env=CHILD_ENV, before_spawn=ask_the_user
                ) as client:
                    result = await client.call_tool("order_status", {"order_id": "PT-1042"})
                    transport = client.session.transport
            assert "shipped" in result.content[0].text  # type: ignore[union-attr]
            assert isinstance(transport, StdioProcess)
            assert reaped(transport.pid)

        nursery.start_soon(run_client)
        await trio.testing.wait_all_tasks_blocked()
        # The hook is waiting for the user: nothing is spawned meanwhile.
        assert [r.argv for r in asked] == [(PYTHON, PAPER_TRAIL)]
        assert spawner.calls == 0
        consent.set()
    assert spawner.calls == 1


@pytest.mark.spec("X-03")
async def test_async_hook_that_refuses_or_is_cancelled_spawns_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spawner = CountingSpawner(monkeypatch)
    marker = tmp_path / "ran"

    async def refuse(request: SpawnRequest) -> None:
        await trio.lowlevel.checkpoint()
        raise Veto(f"{request.argv[0]} is not on the allowlist")

    with trio.fail_after(20), pytest.raises(Veto, match="not on the allowlist"):
        async with open_stdio_process(PYTHON, ["-c", REPORT, str(marker)], before_spawn=refuse):
            pytest.fail("the block must not run")  # pragma: no cover

    async def wait_forever(request: SpawnRequest) -> None:
        await trio.sleep_forever()

    with trio.CancelScope() as scope:

        async def cancel_when_waiting() -> None:
            await trio.testing.wait_all_tasks_blocked()
            scope.cancel()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(cancel_when_waiting)
            async with open_stdio_process(
                PYTHON, ["-c", REPORT, str(marker)], before_spawn=wait_forever
            ):
                pytest.fail("the block must not run")  # pragma: no cover
    assert scope.cancelled_caught
    assert spawner.calls == 0
    assert not marker.exists()


async def test_a_bad_stderr_option_is_refused_before_the_hook_and_the_spawn(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    spawner = CountingSpawner(monkeypatch)
    hooked: list[SpawnRequest] = []
    with pytest.raises(ValueError, match="stderr must be"):
        async with open_stdio_process(
            PYTHON, ["-c", "pass"], stderr="inherit", before_spawn=hooked.append
        ):
            pytest.fail("the block must not run")  # pragma: no cover
    assert hooked == []
    assert spawner.calls == 0


async def test_the_hook_sees_the_whole_environment_with_inherit_env(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # inherit_env=True hands our whole environment over; the hook sees all of it.
    monkeypatch.setenv("TRIO_MCP_TEST_SECRET", "hunter2")
    seen: list[SpawnRequest] = []

    def hook(request: SpawnRequest) -> None:
        seen.append(request)
        raise Veto("looked only")

    with pytest.raises(Veto):
        async with open_stdio_process(PYTHON, inherit_env=True, before_spawn=hook):
            pytest.fail("the block must not run")  # pragma: no cover
    assert seen[0].env == dict(os.environ)
    assert seen[0].env["TRIO_MCP_TEST_SECRET"] == "hunter2"
