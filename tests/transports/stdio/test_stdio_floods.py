"""stdio servers that flood: stdout while we close them (P-09), stderr (P-14).

Reliability catalogue: a server that writes a lot to stdout while the client
closes it must still be able to exit (its stdout is drained, and dropped), and
the close stays within its bound even when the flood never ends; a server that
floods stderr costs bounded memory and the session goes on. Memory is measured
with ``tracemalloc`` (Python allocations of this process: every byte read from a
pipe is a Python object) against the number of bytes the server wrote.

The servers are small Python scripts run with ``sys.executable``. Every test is
bounded by ``trio.fail_after`` and its process is reaped by the code under test
(checked by pid). Real time is needed (the servers are real processes), so the
time bounds asserted are the configured graces, never a measured speed.
"""

from __future__ import annotations

import textwrap
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import trio
from stdio_helpers import CHILD_ENV, PYTHON, reaped

from trio_mcp import open_stdio_client
from trio_mcp import types as mcp_types
from trio_mcp.transports import ExitStep, StdioProcess
from trio_mcp.transports._stdio_client import STDERR_LINE_LIMIT, take_lines

MIB = 1 << 20

# A raw stdio server: answers initialize and ping, then does what the caller
# appends once it has read what it wants from stdin.
HANDSHAKE = """\
import json, os, signal, sys

def answer(message, result):
    reply = {"jsonrpc": "2.0", "id": message["id"], "result": result}
    os.write(1, (json.dumps(reply) + "\\n").encode())

def serve_until(stop_method):
    while True:
        line = sys.stdin.readline()
        if not line:
            return  # EOF: the client is closing us
        message = json.loads(line)
        method = message.get("method")
        if method == "initialize":
            answer(message, {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {},
                "serverInfo": {"name": "flooder", "version": "1"},
            })
        elif method == "ping":
            answer(message, {})
        if method == stop_method:
            return

def log_lines(data):
    # About 64 KiB of notifications/message lines.
    params = {"level": "info", "data": data}
    note = {"jsonrpc": "2.0", "method": "notifications/message", "params": params}
    line = (json.dumps(note) + "\\n").encode()
    return line * (65536 // len(line))
"""


@contextmanager
def peak_python_memory() -> Iterator[list[int]]:
    """Yields a list that holds, after the block, the peak growth of traced memory."""
    result: list[int] = []
    tracemalloc.start()
    try:
        baseline = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        yield result
        result.append(tracemalloc.get_traced_memory()[1] - baseline)
    finally:
        tracemalloc.stop()


def script(tmp_path: Path, name: str, code: str) -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(code))
    return str(path)


@pytest.mark.spec("P-09")
async def test_server_flooding_stdout_while_we_close_is_drained_and_exits_by_itself(
    tmp_path: Path,
) -> None:
    # On EOF the server writes 32 MiB to stdout, then exits 0. Nobody reads
    # frames any more: without the drain it would block on the full pipe
    # until SIGTERM. Exiting 0 proves every byte was taken (a closed pipe
    # would have killed it with EPIPE).
    flood = 32 * MIB
    server = script(
        tmp_path,
        "flood_on_close.py",
        HANDSHAKE
        + f"""
serve_until(None)
block = log_lines("x" * 900)
written = 0
while written < {flood}:
    written += os.write(1, block)
""",
    )
    with trio.fail_after(60), peak_python_memory() as peak:
        async with open_stdio_client(
            PYTHON, [server], env=CHILD_ENV, stderr=None, close_grace=30
        ) as client:
            await client.ping()
            transport = client.session.transport
            assert isinstance(transport, StdioProcess)
        # Timing is not asserted: close_grace is long, so a server stuck on a
        # full pipe would show as SIGTERM below, never as a slow pass.
    assert transport.exit_step is ExitStep.STDIN_CLOSED
    assert transport.returncode == 0
    assert peak[0] < flood // 4  # read and dropped, never accumulated
    assert reaped(transport.pid)


@pytest.mark.spec("P-09")
async def test_endless_stdout_flood_that_ignores_eof_is_closed_within_the_graces(
    tmp_path: Path,
) -> None:
    # Once initialized, the server floods notifications forever and never reads
    # stdin again (so EOF means nothing to it); on SIGTERM it reports how much it
    # wrote, on stderr, and exits.
    server = script(
        tmp_path,
        "endless_flood.py",
        HANDSHAKE
        + """
written = 0
def report(signum, frame):
    os.write(2, f"wrote {written}\\n".encode())
    os._exit(0)
signal.signal(signal.SIGTERM, report)
serve_until("notifications/initialized")
block = log_lines("flood")
while True:
    written += os.write(1, block)
""",
    )
    received = 0
    plenty = trio.Event()

    def count(params: mcp_types.LoggingMessageNotificationParams) -> None:
        nonlocal received
        received += 1
        if received == 1000:
            plenty.set()

    close_grace, terminate_grace = 1.0, 10.0
    lines: list[str] = []
    with trio.fail_after(60), peak_python_memory() as peak:
        async with open_stdio_client(
            PYTHON,
            [server],
            env=CHILD_ENV,
            stderr=lines.append,
            close_grace=close_grace,
            terminate_grace=terminate_grace,
            log_handler=count,
        ) as client:
            transport = client.session.transport
            assert isinstance(transport, StdioProcess)
            await plenty.wait()  # the flood is on while we close
            closing = trio.current_time()
        closed = trio.current_time()
    # SIGTERM came after close_grace, and ended it well before the SIGKILL step.
    assert transport.exit_step is ExitStep.SIGTERM
    assert transport.returncode == 0
    assert close_grace <= closed - closing < close_grace + terminate_grace
    [report] = [line for line in lines if line.startswith("wrote ")]
    written = int(report.split()[1])
    # The pipe holds 64 KiB: far more than that went through, and was dropped.
    assert written > 4 * MIB
    assert peak[0] < 8 * MIB  # typically hundreds of MiB went through
    assert reaped(transport.pid)


@pytest.mark.spec("P-14")
async def test_stderr_flood_is_forwarded_with_bounded_memory_and_the_session_works(
    tmp_path: Path,
) -> None:
    # A real trio_mcp server that writes 2 MiB to stderr before it serves, and
    # 10 MiB more inside a tool: 1 KiB lines, then one line of 1 MiB.
    server = script(
        tmp_path,
        "stderr_flood.py",
        """
        import sys
        import trio_mcp

        def flood(mib):
            out = sys.stderr.buffer
            total = 0
            for _ in range((mib - 1) * 1024):
                total += out.write(b"e" * 1023 + b"\\n")
            total += out.write(b"L" * ((1 << 20) - 1) + b"\\n")
            out.flush()
            return total

        flood(2)
        server = trio_mcp.Server("stderr-flood")

        @server.tool()
        async def flood_stderr(mib: int) -> int:
            return flood(mib)

        @server.tool()
        async def echo(text: str) -> str:
            return text

        server.run_stdio()
        """,
    )
    lines_seen = 0
    chars_seen = 0
    longest = 0

    def sink(line: str) -> None:
        nonlocal lines_seen, chars_seen, longest
        lines_seen += 1
        chars_seen += len(line)
        longest = max(longest, len(line))

    with trio.fail_after(60):
        async with open_stdio_client(PYTHON, [server], env=CHILD_ENV, stderr=sink) as client:
            with peak_python_memory() as peak:
                result = await client.call_tool("flood_stderr", {"mib": 10})
            echoed = await client.call_tool("echo", {"text": "still here"})
            transport = client.session.transport
            assert isinstance(transport, StdioProcess)
    assert result.structured_content == {"result": 10 * MIB}
    assert echoed.content[0].text == "still here"  # type: ignore[union-attr]
    assert peak[0] < 4 * MIB  # while 10 MiB went through
    # Everything reached the sink (it ran to the end once the server exited):
    # the 1 KiB lines whole, the 1 MiB line in pieces of STDERR_LINE_LIMIT.
    pieces = -(-(MIB - 1) // STDERR_LINE_LIMIT)
    assert lines_seen == (1 * 1024 + pieces) + (9 * 1024 + pieces)
    assert chars_seen == (1 * 1024 * 1023 + MIB - 1) + (9 * 1024 * 1023 + MIB - 1)
    assert longest == STDERR_LINE_LIMIT
    # Only the last few lines are kept, each bounded.
    assert len(transport.stderr_lines) == 20
    assert all(len(line) <= STDERR_LINE_LIMIT for line in transport.stderr_lines)
    assert transport.exit_step is ExitStep.STDIN_CLOSED
    assert reaped(transport.pid)


STDERR_STREAM = (
    b"short\n" + b"x" * 20 + b"\n" + b"y" * 8 + b"\n" + b"z" * 9 + b"\r\ntail-no-newline"
)


@pytest.mark.spec("P-14")
@pytest.mark.parametrize("read_size", [1, 2, 3, 7, 8, 9, 16, 17, len(STDERR_STREAM)])
def test_stderr_lines_are_cut_the_same_however_the_reads_fall(read_size: int) -> None:
    # The pump's splitting, with a limit of 8 bytes: a long line comes out in
    # pieces of the limit whatever the reads were, and the buffer never holds
    # more than the limit between reads.
    buffer = bytearray()
    lines: list[bytes] = []
    for start in range(0, len(STDERR_STREAM), read_size):
        buffer += STDERR_STREAM[start : start + read_size]
        lines.extend(take_lines(buffer, 8))
        assert len(buffer) <= 8
    assert lines == [
        b"short",
        b"xxxxxxxx",
        b"xxxxxxxx",
        b"xxxx",
        b"yyyyyyyy",  # exactly the limit: whole
        b"zzzzzzzz",
        b"z\r",  # the CR is dropped by the pump, after splitting
        b"tail-no-",
    ]
    assert buffer == b"newline"  # a partial line, passed on at EOF
