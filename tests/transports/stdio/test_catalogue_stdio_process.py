"""stdio process cases of the robustness catalogue (reliability §3.7, §3.14)
not covered elsewhere: a real server process that stops reading its stdin, and
one interrupted while a handler runs."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import trio
import trio.testing
from stdio_helpers import CHILD_ENV, PAPER_TRAIL, PYTHON, gone, reaped, wait_gone
from test_stdio_floods import HANDSHAKE, script

from trio_mcp import SessionClosed, open_stdio_client
from trio_mcp.transports import ExitStep, StdioProcess

MIB = 1 << 20
#: The raw server of test_stdio_floods, declaring tools (so a tools/call is sent).
TOOLS_HANDSHAKE = HANDSHAKE.replace('"capabilities": {}', '"capabilities": {"tools": {}}')
assert TOOLS_HANDSHAKE != HANDSHAKE


async def test_closing_a_client_whose_server_stopped_reading_is_bounded(tmp_path: Path) -> None:
    """P-08: the server answers a ping, then never reads stdin again. A call
    of 4 MiB fills the pipe and our writer blocks on it; closing the client
    still ends within the graces (EOF means nothing to a process that does
    not read, so SIGTERM ends it) and the blocked call fails."""
    server = script(
        tmp_path,
        "deaf.py",
        TOOLS_HANDSHAKE
        + """
serve_until("ping")
import time
while True:
    time.sleep(60)
""",
    )
    failures: list[BaseException] = []
    close_grace, terminate_grace = 0.5, 0.5
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            async with open_stdio_client(
                PYTHON,
                [server],
                env=CHILD_ENV,
                stderr=None,
                close_grace=close_grace,
                terminate_grace=terminate_grace,
                discover=False,
            ) as client:
                await client.ping()
                transport = client.session.transport
                assert isinstance(transport, StdioProcess)

                async def big_call() -> None:
                    try:
                        await client.session.request(
                            "tools/call", {"name": "x", "arguments": {"blob": "x" * (4 * MIB)}}
                        )
                    except SessionClosed as exc:
                        failures.append(exc)

                nursery.start_soon(big_call)
                await trio.testing.wait_all_tasks_blocked()  # the writer waits on the full pipe
                started = time.monotonic()
            elapsed = time.monotonic() - started
    assert transport.exit_step is ExitStep.SIGTERM
    assert elapsed < close_grace + terminate_grace + 5  # the graces, plus slack for a busy CI
    assert reaped(transport.pid)
    assert len(failures) == 1


async def test_ctrl_c_during_a_handler_shuts_the_server_down_in_order() -> None:
    """T-03, mid-handler: SIGINT while a long tool runs. The server cancels the
    handler, exits with status 0 and writes no traceback; the call in flight
    fails with SessionClosed, and the client closes cleanly."""
    stderr: list[str] = []
    failures: list[BaseException] = []
    with trio.fail_after(30):
        async with (
            trio.open_nursery() as nursery,
            open_stdio_client(PYTHON, [PAPER_TRAIL], env=CHILD_ENV, stderr=stderr.append) as client,
        ):
            transport = client.session.transport
            assert isinstance(transport, StdioProcess)
            running = trio.Event()

            async def long_call() -> None:
                try:
                    await client.call_tool(
                        "prepare_report", {"steps": 1000}, on_progress=lambda p: running.set()
                    )
                except SessionClosed as exc:
                    failures.append(exc)

            nursery.start_soon(long_call)
            await running.wait()  # the handler is running
            os.kill(transport.pid, signal.SIGINT)
            await client.session.wait_closed()
    assert transport.returncode == 0
    assert len(failures) == 1
    assert not any("Traceback" in line for line in stderr), stderr


CLIENT = """
import sys, trio
from trio_mcp import open_stdio_client
from trio_mcp.transports import StdioProcess

async def main():
    async with open_stdio_client(sys.executable, [sys.argv[1]]) as client:
        await client.ping()
        transport = client.session.transport
        assert isinstance(transport, StdioProcess)
        print(transport.pid, flush=True)
        await trio.sleep_forever()

trio.run(main)
"""


async def test_a_server_whose_client_was_killed_exits_on_stdin_eof(tmp_path: Path) -> None:
    """P-12: a real client process holding a stdio server is SIGKILLed; the
    server sees EOF on stdin and exits by itself, promptly."""
    client_script = script(tmp_path, "client.py", CLIENT)
    with trio.fail_after(30):
        client = await trio.lowlevel.open_process(
            [PYTHON, client_script, PAPER_TRAIL],
            env={**os.environ, **CHILD_ENV},
            stdout=subprocess.PIPE,
        )
        assert client.stdout is not None
        line = b""
        while not line.endswith(b"\n"):
            line += await client.stdout.receive_some(64)
        server_pid = int(line)
        assert not gone(server_pid)
        client.kill()
        await client.wait()
        await client.stdout.aclose()
        killed_at = time.monotonic()
        await wait_gone(server_pid)
    assert client.returncode == -signal.SIGKILL
    assert time.monotonic() - killed_at < 5  # "promptly": on EOF, not on a timeout
