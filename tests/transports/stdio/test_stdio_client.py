"""The client side of stdio over real subprocesses: spawn, shutdown escalation, crashes.

Every test is bounded by ``trio.fail_after`` and ends the processes it starts
(the code under test does it; the tests check it by pid).
"""

from __future__ import annotations

import os
import signal
import textwrap
from pathlib import Path

import pytest
import trio
import trio.testing
from stdio_helpers import CHILD_ENV, PAPER_TRAIL, PYTHON, gone, open_fds, reaped, wait_gone

from trio_mcp import SessionClosed, open_stdio_client
from trio_mcp.transports import ExitStep, ProcessEvent, StdioProcess, open_stdio_process


@pytest.mark.spec("SI-10")
@pytest.mark.spec("SI-11")
async def test_server_exits_on_eof_and_is_never_signalled() -> None:
    events: list[ProcessEvent] = []
    before = open_fds()
    with trio.fail_after(20):
        async with open_stdio_client(
            PYTHON, [PAPER_TRAIL], env=CHILD_ENV, on_event=events.append
        ) as client:
            result = await client.call_tool("order_status", {"order_id": "PT-1042"})
            transport = client.session.transport
            assert isinstance(transport, StdioProcess)
    assert "shipped" in result.content[0].text  # type: ignore[union-attr]
    assert transport.exit_step is ExitStep.STDIN_CLOSED
    assert transport.returncode == 0
    assert [e.kind for e in events] == ["spawned", "stdin_closed", "exited"]
    assert reaped(transport.pid)
    assert open_fds() == before


@pytest.mark.spec("SI-10")
@pytest.mark.spec("LC-16")
async def test_server_ignoring_eof_gets_sigterm_after_the_grace() -> None:
    events: list[ProcessEvent] = []
    with trio.fail_after(20):
        async with open_stdio_process(
            PYTHON,
            ["-c", "import time; time.sleep(60)"],
            close_grace=0.2,
            on_event=events.append,
        ) as transport:
            pass
    assert transport.exit_step is ExitStep.SIGTERM
    assert transport.returncode == -signal.SIGTERM
    kinds = [e.kind for e in events]
    assert kinds == ["spawned", "stdin_closed", "sigterm", "exited"]
    # The grace was respected (it is a lower bound, not a timing assertion).
    assert events[2].at - events[1].at >= 0.2
    assert reaped(transport.pid)


@pytest.mark.spec("LC-16")
async def test_server_ignoring_sigterm_gets_sigkill() -> None:
    ready = trio.Event()

    def sink(line: str) -> None:
        if line == "ready":
            ready.set()

    code = (
        "import signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "print('ready', file=sys.stderr, flush=True); time.sleep(60)"
    )
    with trio.fail_after(20):
        async with open_stdio_process(
            PYTHON, ["-c", code], stderr=sink, close_grace=0.1, terminate_grace=0.2
        ) as transport:
            await ready.wait()  # SIGTERM is ignored from now on
    assert transport.exit_step is ExitStep.SIGKILL
    assert transport.returncode == -signal.SIGKILL
    assert reaped(transport.pid)


@pytest.mark.spec("SI-10")
async def test_grandchildren_of_a_launcher_are_gone_after_shutdown() -> None:
    pids: list[int] = []
    got = trio.Event()

    def sink(line: str) -> None:
        pids.append(int(line))
        got.set()

    # sh (the launcher) starts a grandchild, reports its pid, and waits: EOF on
    # stdin means nothing to either, so the whole group must be signalled.
    with trio.fail_after(20):
        async with open_stdio_process(
            "sh", ["-c", "sleep 60 & echo $! >&2; wait"], stderr=sink, close_grace=0.1
        ) as transport:
            await got.wait()
            assert not gone(pids[0])
    assert transport.exit_step is ExitStep.SIGTERM
    assert reaped(transport.pid)
    with trio.fail_after(5):
        # The group's signals reach the grandchild asynchronously.
        await wait_gone(pids[0])
    assert gone(pids[0])


async def test_grandchild_left_by_an_exited_leader_is_killed() -> None:
    pids: list[int] = []
    got = trio.Event()

    def sink(line: str) -> None:
        pids.append(int(line))
        got.set()

    # The leader exits on EOF, leaving a grandchild that ignores SIGTERM behind.
    code = "trap '' TERM; (trap '' TERM; sleep 60) & echo $! >&2; read line"
    with trio.fail_after(20):
        async with open_stdio_process("sh", ["-c", code], stderr=sink) as transport:
            await got.wait()
    assert transport.exit_step is ExitStep.STDIN_CLOSED
    with trio.fail_after(5):
        # SIGKILL to a non-child is delivered asynchronously.
        await wait_gone(pids[0])
    assert gone(pids[0])


@pytest.mark.spec("SI-04")
async def test_server_crash_mid_call_fails_the_call_with_status_and_stderr(
    tmp_path: Path,
) -> None:
    script = tmp_path / "crasher.py"
    script.write_text(
        textwrap.dedent(
            """
            import os, sys
            import trio_mcp

            server = trio_mcp.Server("crasher")

            @server.tool()
            async def crash() -> str:
                print("about to crash: disk on fire", file=sys.stderr, flush=True)
                os._exit(3)

            server.run_stdio()
            """
        )
    )
    lines: list[str] = []
    with trio.fail_after(20):
        async with open_stdio_client(
            PYTHON, [str(script)], env=CHILD_ENV, stderr=lines.append
        ) as client:
            with pytest.raises(SessionClosed) as info:
                await client.call_tool("crash", {})
            transport = client.session.transport
    message = str(info.value)
    assert "exited with status 3" in message
    assert "about to crash: disk on fire" in message
    assert lines == ["about to crash: disk on fire"]
    assert isinstance(transport, StdioProcess)
    assert transport.exit_step is ExitStep.EXITED
    assert reaped(transport.pid)


@pytest.mark.spec("SI-05")
async def test_print_and_child_output_in_a_tool_do_not_corrupt_the_stream(
    tmp_path: Path,
) -> None:
    script = tmp_path / "noisy.py"
    script.write_text(
        textwrap.dedent(
            """
            import os
            import trio_mcp

            server = trio_mcp.Server("noisy")

            @server.tool()
            async def noisy() -> str:
                print("print() from a tool")
                os.system("echo from a child process")
                os.write(1, b"raw write to fd 1\\n")
                return "clean"

            server.run_stdio()
            """
        )
    )
    lines: list[str] = []
    with trio.fail_after(20):
        async with open_stdio_client(
            PYTHON, [str(script)], env=CHILD_ENV, stderr=lines.append
        ) as client:
            result = await client.call_tool("noisy", {})
            assert client.session.statistics().invalid_messages == 0
    assert result.content[0].text == "clean"  # type: ignore[union-attr]
    assert sorted(lines) == sorted(
        ["print() from a tool", "from a child process", "raw write to fd 1"]
    )


@pytest.mark.spec("SI-01")
async def test_environment_is_the_safe_default_plus_what_is_passed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TRIO_MCP_TEST_SECRET", "hunter2")
    code = "import os, sys; print(' '.join(sorted(os.environ)), file=sys.stderr)"
    with trio.fail_after(20):
        async with open_stdio_process(
            PYTHON, ["-c", code], env={"EXTRA": "1"}, stderr=None
        ) as transport:
            with pytest.raises(trio.EndOfChannel):
                await transport.receive()
    names = set(transport.stderr_lines[0].split())
    assert "TRIO_MCP_TEST_SECRET" not in names
    assert "EXTRA" in names
    assert "PATH" in names


async def test_arguments_pass_verbatim_without_a_shell() -> None:
    tricky = ["$HOME", "a b", "; echo no", "'q'"]
    code = "import sys; print(repr(sys.argv[1:]), file=sys.stderr)"
    with trio.fail_after(20):
        async with open_stdio_process(PYTHON, ["-c", code, *tricky], stderr=None) as transport:
            with pytest.raises(trio.EndOfChannel):
                await transport.receive()
    assert transport.stderr_lines[0] == repr(tricky)


async def test_command_not_found_leaks_nothing() -> None:
    before = open_fds()
    with pytest.raises(FileNotFoundError):
        async with open_stdio_process("/nonexistent/trio-mcp-server"):
            pass  # pragma: no cover
    assert open_fds() == before


async def test_cancelled_caller_still_runs_the_whole_shutdown() -> None:
    with trio.move_on_after(0.3) as scope:
        async with open_stdio_process(
            PYTHON, ["-c", "import time; time.sleep(60)"], close_grace=0.1
        ) as transport:
            await trio.sleep_forever()
    assert scope.cancelled_caught
    assert transport.exit_step is ExitStep.SIGTERM
    assert reaped(transport.pid)


@pytest.mark.spec("SI-11")
async def test_server_exits_on_eof_with_a_handler_still_running() -> None:
    # Close stdin while a 30 s tool runs and no cancellation was sent: the
    # server's session owns the handler, so EOF ends it and the process exits.
    init = (
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":'
        b'"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}'
    )
    call = (
        b'{"jsonrpc":"2.0","id":2,"method":"tools/call",'
        b'"params":{"name":"sleep","arguments":{"seconds":30}}}'
    )
    with trio.fail_after(20):
        async with open_stdio_process(
            PYTHON, [PAPER_TRAIL], env=CHILD_ENV, close_grace=10
        ) as transport:
            await transport.send(init)
            assert b'"id":1' in await transport.receive()
            await transport.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
            await transport.send(call)
    assert transport.exit_step is ExitStep.STDIN_CLOSED
    assert transport.returncode == 0


@pytest.mark.spec("SI-12")
async def test_server_terminated_by_sigterm_closes_the_session_cleanly() -> None:
    with trio.fail_after(20):
        async with open_stdio_client(PYTHON, [PAPER_TRAIL], env=CHILD_ENV) as client:
            transport = client.session.transport
            assert isinstance(transport, StdioProcess)
            os.kill(transport.pid, signal.SIGTERM)
            await client.session.wait_closed()
            assert client.session.close_reason == "the peer closed the connection"
    assert transport.exit_step is ExitStep.EXITED
    assert transport.returncode == 0


async def test_ctrl_c_stops_the_server() -> None:
    with trio.fail_after(20):
        async with open_stdio_client(PYTHON, [PAPER_TRAIL], env=CHILD_ENV) as client:
            transport = client.session.transport
            assert isinstance(transport, StdioProcess)
            os.kill(transport.pid, signal.SIGINT)
            await client.session.wait_closed()
    assert transport.returncode == 0


async def test_many_spawn_close_cycles_leave_no_fds_or_zombies() -> None:
    before = open_fds()
    pids = []
    with trio.fail_after(30):
        for _ in range(10):
            async with open_stdio_process(PYTHON, ["-c", "import sys; sys.stdin.read()"]) as t:
                pids.append(t.pid)
    assert open_fds() == before
    assert all(reaped(pid) for pid in pids)


@pytest.mark.spec("SI-10")
async def test_exit_after_our_stdin_close_is_stdin_closed_even_if_reaped_before_shutdown() -> None:
    # A server that exits at once on EOF is often gone (and reaped) before the
    # shutdown looks at it; that is still the graceful step, not "exited on its own".
    events: list[ProcessEvent] = []
    with trio.fail_after(20):
        async with open_stdio_process(
            PYTHON, [PAPER_TRAIL], env=CHILD_ENV, on_event=events.append
        ) as transport:
            await transport.aclose()
            await transport.process.wait()
    assert transport.exit_step is ExitStep.STDIN_CLOSED
    assert transport.returncode == 0
    assert [e.kind for e in events] == ["spawned", "stdin_closed", "exited"]
    assert reaped(transport.pid)


# A child that answers each line with one line and, once its stdin ends, writes
# far more than a pipe holds before it exits: it exits only if the shutdown
# still drains its stdout after aclose woke the parked receive.
_ECHO_THEN_FLOOD = textwrap.dedent(
    """
    import sys
    for line in sys.stdin:
        sys.stdout.write(line)
        sys.stdout.flush()
    sys.stdout.write(("x" * 1023 + "\\n") * 1024)
    sys.stdout.flush()
    """
)


@pytest.mark.spec("SI-10")
async def test_aclose_wakes_a_receive_parked_on_the_pipe_and_the_shutdown_still_drains() -> None:
    """A receive parked on the child's stdout enters no cancel scope of its
    own (issue #16): aclose wakes it through the descriptor, with the same
    ClosedResourceError as before, and leaves stdout open for the drain."""
    with trio.fail_after(20):
        async with open_stdio_process(PYTHON, ["-c", _ECHO_THEN_FLOOD]) as process:
            await process.send(b'{"n":1}')
            assert await process.receive() == b'{"n":1}'
            failure: list[BaseException] = []

            async def receive_until_closed() -> None:
                try:
                    await process.receive()
                except trio.ClosedResourceError as exc:
                    failure.append(exc)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(receive_until_closed)
                await trio.testing.wait_all_tasks_blocked()
                await process.aclose()
            assert len(failure) == 1
            assert "closed while receiving" in str(failure[0])
            with pytest.raises(trio.ClosedResourceError):
                await process.receive()
    # It wrote 1 MiB after its stdin closed: it exited (status 0) because the
    # shutdown read all of it from the pipe it had been woken on.
    assert process.exit_step is ExitStep.STDIN_CLOSED
    assert process.returncode == 0


async def test_receiving_frames_from_the_pipe_enters_no_cancel_scope(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The per-frame cost of the client's receive: the common path, a frame
    read from the pipe, enters no cancel scope (aclose wakes it by the
    descriptor instead), whether the frame was waited for or already read."""
    entered = 0
    original = trio.CancelScope.__enter__

    def counting_enter(scope: trio.CancelScope) -> trio.CancelScope:
        nonlocal entered
        entered += 1
        return original(scope)

    with trio.fail_after(20):
        async with open_stdio_process(PYTHON, ["-c", _ECHO_THEN_FLOOD]) as process:
            await process.send(b'{"n":0}')
            assert await process.receive() == b'{"n":0}'
            monkeypatch.setattr(trio.CancelScope, "__enter__", counting_enter)
            for n in range(1, 6):
                await process.send(b'{"n":%d}' % n)
                assert await process.receive() == b'{"n":%d}' % n
            monkeypatch.undo()
    assert entered == 0
