"""Interop with the TypeScript SDK v2, both ways, over stdio and Streamable HTTP.

The v2 line (``@modelcontextprotocol/server`` and ``/client`` 2.4.0, the Node
HTTP adapter ``@modelcontextprotocol/node`` 2.1.2, zod 4) is installed from npm
into its own cache directory on first use (``~/.cache/trio_mcp/ts-sdk-v2``,
override with ``TRIO_MCP_NODE_CACHE_V2``); if npm cannot install it the tests
fail.

* Our client against a v2 server (``ts_v2_server.mjs``): over stdio
  (``serveStdio``, whose default lets the opening decide the era: our client
  pinned to ``era="legacy"`` gets 2025-11-25, our default ``era="auto"``
  probes and gets 2026-07-28) and over HTTP in the adapter's default mode (the
  handshake era served statelessly: no ``Mcp-Session-Id``, 405 on GET),
  with our client pinned to ``era="legacy"``, and in ``era="auto"``, which
  probes with ``server/discover`` and gets 2026-07-28 (one POST per request,
  no session), then in their ``legacy: 'reject'`` mode, which answers
  ``initialize`` with -32022 listing only 2026-07-28 (over HTTP with status
  400): a refusal for the handshake era, while ``era="auto"`` goes 2026-07-28
  and works, over stdio and HTTP.
* A v2 client (``ts_v2_client.mjs``) against our servers: the paper_trail
  example over stdio and ``serve_http`` in process, in the client's default
  negotiation mode and in ``auto`` (``server/discover`` first; on stdio sent to
  a throwaway process; answered by our dual-era servers, so the session is
  2026-07-28 on both transports, stateless over HTTP). The full modern
  exercise over HTTP is test_http_modern_interop.py's.

Each lists tools, calls one, cancels a call whose handler is running and checks
that the handler stopped, then shuts down. Events are ordered by what the peer
reports (its stderr lines, the in-process handler), never by sleeping; the
times it took (connect, cancel to handler stopped) are printed under the label
``[ts-v2]`` (run with ``-s``) and never asserted, except generous bounds that
prove nothing hung.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio
from npm_cache import npm_install

import trio_mcp
from trio_mcp import Client, Server, http_app, open_http_client, open_stdio_client, serve_http
from trio_mcp import types as t
from trio_mcp.protocol import RequestState
from trio_mcp.transports import ExitStep, StdioProcess

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
PAPER_TRAIL = str(ROOT / "examples" / "paper_trail.py")
#: Where the v2 SDK is installed (override with TRIO_MCP_NODE_CACHE_V2).
NODE_CACHE_V2 = Path(
    os.environ.get("TRIO_MCP_NODE_CACHE_V2", Path.home() / ".cache" / "trio_mcp" / "ts-sdk-v2")
)
V2_PACKAGES: dict[str, str | None] = {
    "@modelcontextprotocol/server": "2.4.0",
    "@modelcontextprotocol/client": "2.4.0",
    "@modelcontextprotocol/node": "2.1.2",
    "zod": "4.6.7",
}
#: Bound on anything that must merely not hang (a loaded 2-core CI machine).
NOT_HUNG = 30.0
#: Bound on a cancel reaching a handler: milliseconds when it works, so this only
#: proves "not hung" (a cancel that never arrives would wait out the 60 s sleep).
CANCEL_NOT_HUNG = 10.0
#: Runs the script argv[2] as __main__ after appending this process's id to the
#: file argv[1]: the test counts the server processes a client spawned.
COUNTING_LAUNCHER = (
    "import os, runpy, sys\n"
    "with open(sys.argv[1], 'a') as log:\n"
    "    log.write(f'{os.getpid()}\\n')\n"
    "sys.argv = sys.argv[2:]\n"
    "runpy.run_path(sys.argv[0], run_name='__main__')\n"
)


def ts_sdk_v2_dir() -> Path:
    """The cache dir holding the v2 SDK and this module's node scripts; installs
    the SDK with npm (bounded) when missing, and fails loudly when impossible."""
    assert shutil.which("node"), "node is needed for the TypeScript SDK v2 interop tests"
    return npm_install(NODE_CACHE_V2, V2_PACKAGES, sorted(HERE.glob("ts_v2_*.mjs")))


def figure(
    direction: str,
    connect: float,
    cancel_to_stopped: float,
    ping_after_cancel: float | None = None,
) -> None:
    """Print the figures the issue asks for (seen with ``pytest -s``), in seconds."""
    line = (
        f"[ts-v2] {direction}: connect {connect * 1000:.0f} ms, "
        f"cancel to handler stopped {cancel_to_stopped * 1000:.1f} ms"
    )
    if ping_after_cancel is not None:
        line += f", ping after cancel {ping_after_cancel * 1000:.1f} ms"
    print(line, flush=True)


def text(result: t.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, t.TextContent)
    return block.text


class Lines:
    """The lines a peer wrote on one of its streams, in order, when each arrived,
    and a way to wait for one."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        #: ``time.perf_counter()`` when each of :attr:`lines` arrived.
        self.arrived: list[float] = []
        self.ended = False
        self._changed = trio.Event()

    def append(self, line: str) -> None:
        self.lines.append(line)
        self.arrived.append(time.perf_counter())
        self._changed.set()
        self._changed = trio.Event()

    async def wait_for(self, prefix: str) -> float:
        """When the first line starting with *prefix* arrived, once there is one;
        fails when the stream ended without one (the peer exited).

        Cancellation: safe; nothing is consumed.
        """
        while True:
            for line, arrived in zip(self.lines, self.arrived, strict=True):
                if line.startswith(prefix):
                    return arrived
            assert not self.ended, f"the stream ended with no line {prefix!r}: {self.lines}"
            await self._changed.wait()

    async def pump(self, stream: trio.abc.ReceiveStream) -> None:
        """Read *stream* to its end, appending each complete line."""
        pending = b""
        async for chunk in stream:
            *complete, pending = (pending + chunk).split(b"\n")
            for line in complete:
                self.append(line.decode())
        self.ended = True
        self._changed.set()


@asynccontextmanager
async def node_process(
    argv: list[str], cwd: Path
) -> AsyncIterator[tuple[trio.Process, Lines, Lines]]:
    """Run *argv* with piped stdio, yielding the process and its stdout and stderr lines.

    On the way out its stdin is closed (the node scripts here exit when it
    ends) and the process is waited for, up to :data:`NOT_HUNG` seconds; then
    it is killed (its ``returncode`` says so).

    Cancellation:
        The process is killed and reaped (``trio.run_process``'s own cleanup).
    """
    out, err = Lines(), Lines()
    async with trio.open_nursery() as nursery:
        process: trio.Process = await nursery.start(
            functools.partial(
                trio.run_process,
                argv,
                cwd=cwd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                check=False,
            )
        )
        stdin, stdout, stderr = process.stdin, process.stdout, process.stderr
        assert stdin is not None
        assert stdout is not None
        assert stderr is not None
        nursery.start_soon(out.pump, stdout)
        nursery.start_soon(err.pump, stderr)
        try:
            yield process, out, err
        except Exception as exc:
            exc.add_note(f"{' '.join(argv[1:])}: its stderr was {err.lines}")
            raise
        finally:
            with trio.CancelScope(shield=True):
                await stdin.aclose()
            nursery.cancel_scope.deadline = trio.current_time() + NOT_HUNG


@asynccontextmanager
async def v2_http_server(legacy: str) -> AsyncIterator[tuple[str, Lines]]:
    """A v2 server behind the Node HTTP adapter in its *legacy* mode
    (``stateless`` or ``reject``): yields its URL and its stderr lines."""
    cache = await trio.to_thread.run_sync(ts_sdk_v2_dir)
    argv = ["node", str(cache / "ts_v2_server.mjs"), "http", legacy]
    async with node_process(argv, cache) as (process, out, err):
        with trio.fail_after(NOT_HUNG):
            await out.wait_for("http://")
        yield next(line for line in out.lines if line.startswith("http://")), err
    assert process.returncode == 0, err.lines


async def exercise_v2_server(
    client: Client, server_log: Lines, protocol_version: str = "2025-11-25"
) -> tuple[float, float]:
    """List and call the tools of the v2 server behind *client* (which must
    have negotiated *protocol_version*), then cancel a call once its handler
    runs and ping (``server/discover`` in 2026-07-28, which has no ping).

    Returns the seconds from the cancel to the handler reporting that its abort
    signal fired (which the test waits for: the cancel must stop the handler),
    and the seconds from the cancel to the ping's answer.
    """
    assert client.server_info.name == "ts-v2-server"
    assert client.protocol_version == protocol_version
    tools = await client.list_tools()
    assert sorted(tool.name for tool in tools.tools) == ["add", "sleep"]
    assert text(await client.call_tool("add", {"a": 2, "b": 3})) == "5"

    call_scope = trio.CancelScope()

    async def call_sleep() -> None:
        with call_scope:
            await client.call_tool("sleep", {"seconds": 60})

    async with trio.open_nursery() as nursery:
        nursery.start_soon(call_sleep)
        with trio.fail_after(NOT_HUNG):
            await server_log.wait_for("sleep: started")
        cancelled = time.perf_counter()
        call_scope.cancel()
    with trio.fail_after(NOT_HUNG):
        await client.ping()
    pinged = time.perf_counter()
    stopped: float | None = None
    with trio.move_on_after(CANCEL_NOT_HUNG):
        stopped = await server_log.wait_for("sleep: aborted after")
    assert stopped is not None, f"the cancel did not stop the handler in {CANCEL_NOT_HUNG:g} s"
    assert call_scope.cancelled_caught
    sleeps = [r for r in client.session.requests() if r.method == "tools/call"][-1:]
    assert [r.state for r in sleeps] == [RequestState.CANCELLED]
    return stopped - cancelled, pinged - cancelled


@pytest.mark.spec("CN-01")
@pytest.mark.spec("SI-10")
@pytest.mark.parametrize(
    ("era", "protocol_version"), [("legacy", "2025-11-25"), ("auto", "2026-07-28")]
)
async def test_our_client_against_a_v2_server_over_stdio(era: str, protocol_version: str) -> None:
    # serveStdio's default (legacy: 'serve') lets the opening decide: our
    # probe in era="auto" makes the connection 2026-07-28.
    cache = await trio.to_thread.run_sync(ts_sdk_v2_dir)
    server_log = Lines()
    started = time.perf_counter()
    with trio.fail_after(NOT_HUNG * 2):
        async with open_stdio_client(
            "node",
            [str(cache / "ts_v2_server.mjs"), "stdio"],
            cwd=cache,
            inherit_env=True,
            stderr=server_log.append,
            era=era,
            # The answered probe is what this is about, not a cold start's speed.
            probe_timeout=NOT_HUNG,
        ) as client:
            connected = time.perf_counter()
            cancel_to_stopped, ping_after_cancel = await exercise_v2_server(
                client, server_log, protocol_version
            )
            transport = client.session.transport
    # It exited on its own once its stdin closed.
    assert isinstance(transport, StdioProcess)
    assert transport.exit_step is ExitStep.STDIN_CLOSED
    figure(
        f"our client ({era}) -> v2 server, stdio",
        connected - started,
        cancel_to_stopped,
        ping_after_cancel,
    )


@pytest.mark.spec("CN-01")
async def test_our_client_against_a_v2_server_over_http_in_the_handshake_era() -> None:
    exchanges: list[tuple[str, int, str | None]] = []

    async def record(response: httpx.Response) -> None:
        session_id = response.headers.get("mcp-session-id")
        exchanges.append((response.request.method, response.status_code, session_id))

    async with (
        v2_http_server("stateless") as (url, server_log),
        httpx.AsyncClient(
            timeout=httpx.Timeout(NOT_HUNG, read=None), event_hooks={"response": [record]}
        ) as http,
    ):
        started = time.perf_counter()
        with trio.fail_after(NOT_HUNG * 2):
            async with open_http_client(url, http_client=http, era="legacy") as client:
                connected = time.perf_counter()
                cancel_to_stopped, ping_after_cancel = await exercise_v2_server(client, server_log)
    # The handshake era without sessions: no response carried a session id, the
    # server has no stream to offer on GET, and with no session there was nothing
    # for a DELETE to end on the way out.
    assert all(session_id is None for _, _, session_id in exchanges), exchanges
    methods = [method for method, _, _ in exchanges]
    assert [status for method, status, _ in exchanges if method == "GET"] == [405], exchanges
    assert all(status in (200, 202) for method, status, _ in exchanges if method == "POST")
    assert "DELETE" not in methods, exchanges
    figure(
        "our client -> v2 server, HTTP (stateless)",
        connected - started,
        cancel_to_stopped,
        ping_after_cancel,
    )


@pytest.mark.spec("CN-13", "HM-04", "HM-13", "HM-19", "HM-32")
@pytest.mark.parametrize("legacy", ["stateless", "reject"])
async def test_our_client_against_a_v2_server_over_http_in_2026_07_28(legacy: str) -> None:
    """``era="auto"`` against ``createMcpHandler`` in its default (both eras,
    the old one without sessions) and its modern-only mode: ``server/discover``
    is answered, so every request is a POST of its own with its metadata
    headers, no session, no GET, no DELETE; a cancel is the closed response
    stream, and the handler's abort signal fires."""
    posts: list[httpx.Headers] = []
    exchanges: list[tuple[str, int, str | None]] = []

    async def seen(request: httpx.Request) -> None:
        if request.method == "POST":
            posts.append(request.headers)

    async def record(response: httpx.Response) -> None:
        session_id = response.headers.get("mcp-session-id")
        exchanges.append((response.request.method, response.status_code, session_id))

    async with (
        v2_http_server(legacy) as (url, server_log),
        httpx.AsyncClient(
            timeout=httpx.Timeout(NOT_HUNG, read=None),
            event_hooks={"request": [seen], "response": [record]},
        ) as http,
    ):
        started = time.perf_counter()
        with trio.fail_after(NOT_HUNG * 2):
            async with open_http_client(url, http_client=http, remember_era=False) as client:
                assert client.era == "modern"
                connected = time.perf_counter()
                cancel_to_stopped, ping_after_cancel = await exercise_v2_server(
                    client, server_log, "2026-07-28"
                )
    assert {method for method, _, _ in exchanges} == {"POST"}, exchanges
    assert all(session_id is None for _, _, session_id in exchanges), exchanges
    assert all("mcp-session-id" not in headers for headers in posts)
    assert [h["mcp-method"] for h in posts][:1] == ["server/discover"]
    assert all(h["mcp-protocol-version"] == "2026-07-28" for h in posts)
    calls = [h for h in posts if h["mcp-method"] == "tools/call"]
    assert {h["mcp-name"] for h in calls} == {"add", "sleep"}
    # No notifications/cancelled: over HTTP the closed stream is the cancel.
    assert all(h["mcp-method"] != "notifications/cancelled" for h in posts)
    figure(
        f"our client (auto) -> v2 server ({legacy}), HTTP 2026-07-28",
        connected - started,
        cancel_to_stopped,
        ping_after_cancel,
    )


async def test_our_client_against_a_v2_server_that_refuses_the_handshake() -> None:
    # The handshake era pinned: the refusal is all there is.
    async with v2_http_server("reject") as (url, _):
        with (
            trio.fail_after(NOT_HUNG),
            pytest.raises(trio_mcp.MCPError, match="2026-07-28"),
        ):
            async with open_http_client(url, era="legacy"):
                pass


async def test_our_client_against_a_v2_stdio_server_that_refuses_the_handshake() -> None:
    # The handshake era pinned: the refusal is all there is.
    cache = await trio.to_thread.run_sync(ts_sdk_v2_dir)
    with (
        trio.fail_after(NOT_HUNG),
        pytest.raises(trio_mcp.HandshakeRefused) as refused,
    ):
        async with open_stdio_client(
            "node",
            [str(cache / "ts_v2_server.mjs"), "stdio", "reject"],
            cwd=cache,
            inherit_env=True,
            era="legacy",
        ):
            pass
    # Reported as the server's refusal, with the revisions it offers; the
    # server's -32022 is the cause.
    assert refused.value.supported == ("2026-07-28",)
    assert str(refused.value).endswith("this server speaks only 2026-07-28")
    assert isinstance(refused.value.__cause__, trio_mcp.RPCError)
    assert refused.value.__cause__.code == -32022


@pytest.mark.spec("SI-14")
async def test_our_client_goes_modern_with_a_v2_stdio_server_that_refuses_the_handshake() -> None:
    # era="auto" (the default): the server/discover probe is answered, so the
    # 2025 handshake it refuses is never tried, and everything works in
    # 2026-07-28 on the one process.
    cache = await trio.to_thread.run_sync(ts_sdk_v2_dir)
    server_log = Lines()
    started = time.perf_counter()
    with trio.fail_after(NOT_HUNG * 2):
        async with open_stdio_client(
            "node",
            [str(cache / "ts_v2_server.mjs"), "stdio", "reject"],
            cwd=cache,
            inherit_env=True,
            stderr=server_log.append,
            # The answered probe is what this is about, not a cold start's speed.
            probe_timeout=NOT_HUNG,
        ) as client:
            connected = time.perf_counter()
            assert client.era == "modern"
            assert client.initialize_result is None
            cancel_to_stopped, ping_after_cancel = await exercise_v2_server(
                client, server_log, "2026-07-28"
            )
            methods = [r.method for r in client.session.requests()]
            transport = client.session.transport
    assert "initialize" not in methods
    assert isinstance(transport, StdioProcess)
    assert transport.exit_step is ExitStep.STDIN_CLOSED
    figure(
        "our client (auto) -> v2 server refusing the handshake, stdio",
        connected - started,
        cancel_to_stopped,
        ping_after_cancel,
    )


def v2_client_events(stdout: list[str]) -> dict[str, dict[str, Any]]:
    """The v2 client's JSON lines, by event name."""
    events = [json.loads(line) for line in stdout if line.startswith("{")]
    return {event.pop("event"): event for event in events}


def assert_v2_client_saw_paper_trail(
    events: dict[str, dict[str, Any]], server: str, era: str = "legacy"
) -> None:
    assert events["connected"]["server"] == server
    assert events["connected"]["protocol"] == ("2026-07-28" if era == "modern" else "2025-11-25")
    assert events["connected"]["era"] == era
    assert events["called"] == {
        "text": "PT-1042: shipped, carrier Parcelforce, ETA 2 Dec 2026",
        "isError": False,
    }
    # Its abort rejected the call on its side; then the session went on.
    assert events["aborted"]["outcome"].startswith("rejected")
    # 2026-07-28 has no ping; the client sends server/discover there.
    assert events["pinged"] == {"method": "server/discover" if era == "modern" else "ping"}
    # Closed: over stdio that includes our server's stderr ending (it exited);
    # over HTTP, its DELETE was answered.
    assert "closed" in events


@pytest.mark.spec("CN-05")
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_v2_client_against_our_server_over_stdio(mode: str, tmp_path: Path) -> None:
    cache = await trio.to_thread.run_sync(ts_sdk_v2_dir)
    spawned = tmp_path / "spawned"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    server = [sys.executable, "-c", COUNTING_LAUNCHER, str(spawned), PAPER_TRAIL]
    with trio.fail_after(NOT_HUNG * 2):
        done = await trio.run_process(
            ["node", str(cache / "ts_v2_client.mjs"), mode, "stdio", *server],
            cwd=cache,
            env=env,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    assert done.returncode == 0, done.stderr.decode()
    events = v2_client_events(done.stdout.decode().splitlines())
    # Our stdio server is dual-era: `auto`'s probe is answered, so it goes
    # 2026-07-28 (the session process then opens with tools/list).
    assert_v2_client_saw_paper_trail(
        events, "paper-trail", "modern" if mode == "auto" else "legacy"
    )
    assert events["tools"]["names"] == ["order_status", "prepare_report", "return_order", "sleep"]
    # Our handler saw the cancel and stopped (paper_trail logs it on stderr,
    # which the client piped and waited for).
    assert events["handler-stopped"]["line"].startswith("sleep: handler cancelled after")
    # `auto` sent its server/discover probe to a throwaway process of its own,
    # then ran the session on a second one.
    assert len(spawned.read_text().split()) == (2 if mode == "auto" else 1)
    figure(
        f"v2 client ({mode}) -> our server, stdio",
        events["connected"]["connectMs"] / 1000,
        events["handler-stopped"]["cancelStoppedMs"] / 1000,
    )


class SleepHandler:
    """What our in-process ``sleep`` handler went through, with the time it stopped."""

    def __init__(self) -> None:
        self.started = trio.Event()
        self.stopped = trio.Event()
        self.cancelled = False
        self.stopped_at = 0.0


def paper_trail_lookalike(sleep_handler: SleepHandler) -> Server:
    """Our server with paper_trail's ``order_status`` and a ``sleep`` observed in process."""
    server = Server("trio-http-v2", version="1.0")

    @server.tool()
    async def order_status(order_id: str) -> str:
        """Status, carrier and ETA of an order."""
        return f"{order_id}: shipped, carrier Parcelforce, ETA 2 Dec 2026"

    @server.tool()
    async def sleep(seconds: float) -> str:
        """Wait for *seconds*, then say so."""
        sleep_handler.started.set()
        try:
            await trio.sleep(seconds)
        except trio.Cancelled:
            sleep_handler.cancelled = True
            raise
        finally:
            sleep_handler.stopped_at = time.perf_counter()
            sleep_handler.stopped.set()
        return f"slept {seconds:g}s"

    return server


@pytest.mark.spec("CN-05", "HM-13", "HM-32")
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_v2_client_against_our_server_over_http(mode: str) -> None:
    cache = await trio.to_thread.run_sync(ts_sdk_v2_dir)
    sleep_handler = SleepHandler()
    app = http_app(paper_trail_lookalike(sleep_handler))
    async with trio.open_nursery() as nursery:
        url = await nursery.start(lambda task_status: serve_http(app, task_status=task_status))
        argv = ["node", str(cache / "ts_v2_client.mjs"), mode, "http", url + "/mcp"]
        async with node_process(argv, cache) as (process, out, err):
            with trio.fail_after(NOT_HUNG * 2):
                await out.wait_for('{"event":"sleeping"')
                await sleep_handler.started.wait()
                # The client aborts its call when it reads this line.
                cancelled = time.perf_counter()
                assert process.stdin is not None
                await process.stdin.send_all(b"abort\n")
                await sleep_handler.stopped.wait()
                await out.wait_for('{"event":"closed"')
        sessions_left = app.session_count
        nursery.cancel_scope.cancel()
    assert process.returncode == 0, err.lines
    events = v2_client_events(out.lines)
    era = "modern" if mode == "auto" else "legacy"
    assert_v2_client_saw_paper_trail(events, "trio-http-v2", era)
    assert events["tools"]["names"] == ["order_status", "sleep"]
    assert sleep_handler.cancelled
    assert sessions_left == 0
    posted = events["closed"]["posted"]
    if mode == "auto":
        # Our endpoint serves both eras: the server/discover probe is answered,
        # so the client goes 2026-07-28 without a session (no initialize, no
        # DELETE), and its abort closed the call's stream, which our server read
        # as the cancel (HM-13): no notifications/cancelled.
        assert posted[0] == ["server/discover", 200], posted
        assert events["connected"]["sessionId"] is None
        methods = [method for method, _ in posted]
        assert "initialize" not in methods
        assert "notifications/cancelled" not in methods
    else:
        # The handshake era: a session, ended by its DELETE (terminateSession);
        # the abort reached us as notifications/cancelled.
        assert events["connected"]["sessionId"]
        assert posted[0] == ["initialize", 200], posted
        assert ["notifications/cancelled", 202] in posted
    figure(
        f"v2 client ({mode}) -> our server, HTTP",
        events["connected"]["connectMs"] / 1000,
        sleep_handler.stopped_at - cancelled,
    )
