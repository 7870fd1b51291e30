"""Interop in the 2026-07-28 era over stdio with the official SDKs, both ways.

* Our client (``era="auto"``) against modern servers written with the Python
  SDK (``mcp`` 2.3.0, ``modern_sdk_server.py``) and the TypeScript SDK v2
  (2.4.0, ``ts_v2_modern_server.mjs``, in its ``legacy: 'reject'`` and
  ``'serve'`` modes): the probe makes the connection modern, then it lists the
  tools, calls ``add``, calls ``confirm`` (an input-required round answered by
  our elicitation handler, PT-12..PT-14), cancels ``slow`` once the server says
  it started (CN-01) and checks that a call still works, calls ``grow`` and
  waits for the cached tool list to follow the ``list_changed`` the server
  writes on our listen stream (SB-01), and shuts down. Once more against the
  mcp server with its start held until our probe has timed out and our
  fallback ``initialize`` is written: it reads the probe first, refuses the
  handshake with -32022, and the client still goes modern.
* Their clients against our dual-era server (``modern_trio_server.py``): the
  Python SDK client in its default ``auto`` mode (which probes on the session's
  own pipe) and the TypeScript v2 client in ``auto`` and pinned to 2026-07-28
  (both probe on a throwaway sibling process). Each prints one JSON line per
  step, and every line is checked.

Events are ordered by what the peers report (our server's and theirs' stderr
lines, the peer clients' JSON lines, our client's records), never by sleeping.
The times things took are printed under the label ``[modern]`` (run with
``-s``) and never asserted, beyond generous bounds that prove nothing hung.
The peers' ``--cancel=timeout`` mode is not used: it cancels after a fixed
0.5 s, which orders the cancel after the handler's start only by timing.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import attrs
import orjson
import pytest
import trio
from test_ts_v2_interop import (
    CANCEL_NOT_HUNG,
    COUNTING_LAUNCHER,
    NOT_HUNG,
    Lines,
    text,
    ts_sdk_v2_dir,
)

from trio_mcp import Client, FormElicitation, open_stdio_client
from trio_mcp import types as t
from trio_mcp.protocol import FrameDirection, RequestObserver, RequestState
from trio_mcp.transports import ExitStep, StdioProcess

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
OUR_SERVER = str(HERE / "modern_trio_server.py")
TOOLS = ["add", "confirm", "grow", "slow"]
#: Our probe's bound here: these tests are about the answered probe. A server
#: slower to start than the 2 s default (an mcp import on a loaded machine)
#: takes the timed-out path instead (initialize, refused with -32022, then
#: modern), which works too but puts an initialize on the wire.
PROBE_NOT_HUNG = NOT_HUNG


def figure(direction: str, timings: dict[str, float]) -> None:
    """Print one direction's timings (seconds), in milliseconds, seen with ``pytest -s``."""
    parts = ", ".join(f"{name} {seconds * 1000:.1f} ms" for name, seconds in timings.items())
    print(f"[modern] {direction}: {parts}", flush=True)


class FrameLog(RequestObserver):
    """Every frame our session read or wrote, decoded, in order."""

    def __init__(self) -> None:
        self.frames: list[tuple[FrameDirection, dict[str, Any]]] = []

    def on_frame(self, direction: FrameDirection, data: bytes, at: float) -> None:
        self.frames.append((direction, orjson.loads(data)))

    def sent(self, method: str) -> list[dict[str, Any]]:
        """The frames we wrote with *method*."""
        return [
            frame
            for direction, frame in self.frames
            if direction is FrameDirection.OUT and frame.get("method") == method
        ]


@attrs.define
class Asked:
    """The elicitations our handler answered (accept ``{"ok": true}``, as the
    peer clients do)."""

    messages: list[str] = attrs.Factory(list)

    async def __call__(self, request: FormElicitation) -> t.ElicitResult:
        self.messages.append(request.message)
        return t.ElicitResult(action="accept", content={"ok": True})


async def exercise_modern_server(
    client: Client, server_log: Lines, asked: Asked, server_name: str
) -> dict[str, float]:
    """Run the steps against a modern peer server; return how long each took."""
    assert client.era == "modern"
    assert client.protocol_version == "2026-07-28"
    assert client.server_info.name == server_name
    assert client.initialize_result is None
    assert client.discover_result is not None
    # Discovery filled the cache; a plain list agrees.
    assert sorted(client.tools) == TOOLS
    tools = await client.list_tools()
    assert sorted(tool.name for tool in tools.tools) == TOOLS
    assert text(await client.call_tool("add", {"a": 2, "b": 3})) == "5"

    # confirm: the server ends the first round with an input-required result;
    # call_tool answers it with our handler and retries on a new id.
    started = time.perf_counter()
    confirmed = await client.call_tool("confirm", {"item": "order-7"})
    confirm_seconds = time.perf_counter() - started
    assert text(confirmed) == "confirmed order-7"
    assert asked.messages == ["Confirm order-7?"]
    calls = [r for r in client.session.requests() if r.method == "tools/call"]
    (retry,) = [r for r in calls if r.follows is not None]
    (first,) = [r for r in calls if r.id == retry.follows]
    assert first.input_required
    assert first.state is RequestState.COMPLETED
    assert not retry.input_required

    # slow: cancelled from our side once its handler reports that it runs.
    call_scope = trio.CancelScope()

    async def call_slow() -> None:
        with call_scope:
            await client.call_tool("slow")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(call_slow)
        with trio.fail_after(NOT_HUNG):
            await server_log.wait_for("slow started")
        cancelled = time.perf_counter()
        call_scope.cancel()
    stopped: float | None = None
    with trio.move_on_after(CANCEL_NOT_HUNG):
        stopped = await server_log.wait_for("slow cancelled")
    assert stopped is not None, f"the cancel did not stop the handler in {CANCEL_NOT_HUNG:g} s"
    assert call_scope.cancelled_caught
    slow = [r for r in client.session.requests() if r.method == "tools/call"][-1]
    assert slow.state is RequestState.CANCELLED
    # The session goes on.
    assert text(await client.call_tool("add", {"a": 1, "b": 1})) == "2"

    # grow: the server's list_changed reaches our cached list's listen stream
    # (opened and acknowledged before the client was handed to us).
    listens = [r for r in client.session.requests() if r.method == "subscriptions/listen"]
    assert [r.state for r in listens] == [RequestState.RUNNING]
    grew_at = time.perf_counter()
    grown = text(await client.call_tool("grow"))
    assert grown == "grown1"
    with trio.fail_after(NOT_HUNG):
        while grown not in client.tools:
            await client.wait_list_changed("tools")
    refreshed = time.perf_counter() - grew_at
    assert sorted(client.tools) == sorted([*TOOLS, grown])
    return {
        "confirm (2 rounds)": confirm_seconds,
        "cancel to handler stopped": stopped - cancelled,
        "grow to cache refreshed": refreshed,
    }


def assert_listen_ended_by_us(frames: FrameLog) -> None:
    """Our listen stream ended with the client: we told the server (SB-08)."""
    (listen,) = frames.sent("subscriptions/listen")
    cancels = [f["params"]["requestId"] for f in frames.sent("notifications/cancelled")]
    assert listen["id"] in cancels, cancels


@pytest.mark.spec("CN-01")
@pytest.mark.spec("SI-10")
async def test_our_client_against_a_python_sdk_modern_server() -> None:
    server_log, asked, frames = Lines(), Asked(), FrameLog()
    started = time.perf_counter()
    with trio.fail_after(NOT_HUNG * 2):
        async with open_stdio_client(
            sys.executable,
            [str(HERE / "modern_sdk_server.py")],
            inherit_env=True,
            stderr=server_log.append,
            elicitation=asked,
            observer=frames,
            probe_timeout=PROBE_NOT_HUNG,
        ) as client:
            connected = time.perf_counter()
            timings = await exercise_modern_server(client, server_log, asked, "modern-sdk-server")
            transport = client.session.transport
    # One process: the probe went to the session's own (SI-14), and it exited
    # on its own once its stdin closed.
    assert isinstance(transport, StdioProcess)
    assert transport.exit_step is ExitStep.STDIN_CLOSED
    assert [m for _, f in frames.frames if (m := f.get("method"))][:2] == [
        "server/discover",
        "subscriptions/listen",
    ]
    assert not frames.sent("initialize")
    assert_listen_ended_by_us(frames)
    figure("our client -> mcp 2.3.0 server", {"connect": connected - started, **timings})


#: Runs the script argv[2] as __main__ once a byte can be read from the FIFO
#: argv[1]: the test holds the server's start until it wants it.
GATED_LAUNCHER = (
    "import runpy, sys\n"
    "with open(sys.argv[1], 'rb') as gate:\n"
    "    gate.read(1)\n"
    "sys.argv = sys.argv[2:]\n"
    "runpy.run_path(sys.argv[0], run_name='__main__')\n"
)


class OpenGateOnInitialize(FrameLog):
    """A :class:`FrameLog` that sets :attr:`initialize_sent` once we wrote ``initialize``."""

    def __init__(self) -> None:
        super().__init__()
        self.initialize_sent = trio.Event()

    def on_frame(self, direction: FrameDirection, data: bytes, at: float) -> None:
        super().on_frame(direction, data, at)
        if self.sent("initialize"):
            self.initialize_sent.set()


@pytest.mark.spec("SI-14")
async def test_our_client_goes_modern_with_a_python_sdk_server_slower_than_the_probe(
    tmp_path: Path,
) -> None:
    # The mcp server starts only after our probe timed out and our fallback
    # initialize is on its stdin, so it reads the probe first, locks the
    # connection to 2026-07-28 and refuses initialize with -32022: the client
    # must go modern (a cold start slower than probe_timeout, made certain).
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    frames = OpenGateOnInitialize()

    def open_gate() -> None:
        with open(gate, "wb") as opened:
            opened.write(b"go")

    async def start_server_when_initialize_is_sent() -> None:
        await frames.initialize_sent.wait()
        await trio.to_thread.run_sync(open_gate, abandon_on_cancel=True)

    server_log, asked = Lines(), Asked()
    started = time.perf_counter()
    with trio.fail_after(NOT_HUNG * 2):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(start_server_when_initialize_is_sent)
            async with open_stdio_client(
                sys.executable,
                ["-c", GATED_LAUNCHER, str(gate), str(HERE / "modern_sdk_server.py")],
                inherit_env=True,
                stderr=server_log.append,
                elicitation=asked,
                observer=frames,
                probe_timeout=0.1,
                remember_era=False,
            ) as client:
                connected = time.perf_counter()
                timings = await exercise_modern_server(
                    client, server_log, asked, "modern-sdk-server"
                )
    methods = [f.get("method") for direction, f in frames.frames if direction is FrameDirection.OUT]
    assert methods[:4] == [
        "server/discover",
        "notifications/cancelled",
        "initialize",
        "server/discover",
    ], methods
    (initialize,) = frames.sent("initialize")
    (refusal,) = [
        f
        for d, f in frames.frames
        if d is FrameDirection.IN and f.get("id") == initialize["id"] and "error" in f
    ]
    assert refusal["error"]["code"] == -32022
    assert refusal["error"]["data"]["supported"] == ["2026-07-28"]
    assert "notifications/initialized" not in methods
    figure(
        "our client -> mcp 2.3.0 server started after the probe timed out",
        {"connect": connected - started, **timings},
    )


@pytest.mark.spec("CN-01")
@pytest.mark.spec("SI-10")
@pytest.mark.parametrize("legacy", ["reject", "serve"])
async def test_our_client_against_a_ts_v2_modern_server(legacy: str) -> None:
    cache = await trio.to_thread.run_sync(ts_sdk_v2_dir)
    server_log, asked, frames = Lines(), Asked(), FrameLog()
    started = time.perf_counter()
    with trio.fail_after(NOT_HUNG * 2):
        async with open_stdio_client(
            "node",
            [str(cache / "ts_v2_modern_server.mjs"), legacy],
            cwd=cache,
            inherit_env=True,
            stderr=server_log.append,
            elicitation=asked,
            observer=frames,
            probe_timeout=PROBE_NOT_HUNG,
        ) as client:
            connected = time.perf_counter()
            timings = await exercise_modern_server(client, server_log, asked, "ts-v2-modern-server")
            transport = client.session.transport
    assert isinstance(transport, StdioProcess)
    assert transport.exit_step is ExitStep.STDIN_CLOSED
    assert not frames.sent("initialize")
    assert_listen_ended_by_us(frames)
    # Its stderr had only the tool's event lines (no "error: ..." reports).
    assert server_log.lines == ["slow started", "slow cancelled"]
    figure(
        f"our client -> TS v2 server (legacy: {legacy})",
        {"connect": connected - started, **timings},
    )


# --------------------------------------------- their clients, our server


def expected_steps(*, ts: bool) -> list[dict[str, Any]]:
    """The JSON lines a peer client prints when every step works against our
    server in the 2026-07-28 era (the TypeScript twin names events by method
    and says how its listen ended)."""
    listen: dict[str, Any] = {
        "step": "listen",
        "honored": {"toolsListChanged": True},
        "grew": "grown1",
        "event": "notifications/tools/list_changed" if ts else "ToolsListChanged",
        "tools": sorted([*TOOLS, "grown1"]),
    }
    if ts:
        listen["ended"] = "local"
    return [
        {"step": "connect", "era": "modern", "protocolVersion": "2026-07-28"},
        {"step": "tools", "names": TOOLS},
        {"step": "add", "text": "5"},
        {"step": "confirm", "text": "confirmed order-7", "asked": ["Confirm order-7?"]},
        {
            "step": "slow",
            "cancel": "signal",
            # The TS SDK rejects an aborted call with its REQUEST_TIMEOUT code.
            "outcome": "rejected: SdkError REQUEST_TIMEOUT" if ts else "cancelled",
            "stopped": True,
        },
        listen,
        {"step": "after-listen", "text": "2"},
        {"step": "closed"},
    ]


async def run_peer_client(argv: list[str], cwd: Path) -> tuple[list[dict[str, Any]], list[float]]:
    """Run a peer client to its end; return its JSON lines and when each arrived
    (seconds after the spawn).

    Fails unless it exits 0 having copied no line of our server's stderr other
    than the events it waits for (the only lines our server writes when nothing
    goes wrong). Our server gets this process's environment with the tree on
    ``PYTHONPATH`` (both peers pass their environment on to the server).

    Cancellation: the client is killed and reaped (``trio.run_process``).
    """
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out, err = Lines(), Lines()
    started = time.perf_counter()
    with trio.fail_after(NOT_HUNG * 2):
        async with trio.open_nursery() as nursery:
            process: trio.Process = await nursery.start(
                functools.partial(
                    trio.run_process,
                    argv,
                    cwd=cwd,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    check=False,
                )
            )
            assert process.stdout is not None
            assert process.stderr is not None
            nursery.start_soon(out.pump, process.stdout)
            nursery.start_soon(err.pump, process.stderr)
    # The nursery ended once the client exited and both pipes reached their end.
    assert process.returncode == 0, (out.lines, err.lines)
    assert not [line for line in err.lines if line.startswith("[server]")], err.lines
    steps = [json.loads(line) for line in out.lines]
    return steps, [arrived - started for arrived in out.arrived]


def step_timings(steps: list[dict[str, Any]], arrived: list[float]) -> dict[str, float]:
    """How long each step took, from the peer's line before it to its own."""
    timings = {"connect": arrived[0]}
    for i in range(1, len(steps)):
        timings[steps[i]["step"]] = arrived[i] - arrived[i - 1]
    return timings


def spawn_counting(log: Path) -> list[str]:
    """Our server's command line, run through a launcher that records each spawn in *log*."""
    return [sys.executable, "-c", COUNTING_LAUNCHER, str(log), OUR_SERVER]


@pytest.mark.spec("CN-05")
@pytest.mark.spec("SI-01")
async def test_a_python_sdk_client_against_our_server(tmp_path: Path) -> None:
    spawned = tmp_path / "spawned"
    argv = [sys.executable, str(HERE / "modern_sdk_client.py"), *spawn_counting(spawned)]
    steps, arrived = await run_peer_client(argv, HERE)
    expected = expected_steps(ts=False)
    expected[0].update(mode="auto", server="modern-trio-server")
    assert steps == expected
    # It probes on the session's own pipe: one process.
    assert len(spawned.read_text().split()) == 1
    figure("mcp 2.3.0 client (auto) -> our server", step_timings(steps, arrived))


@pytest.mark.spec("CN-05")
@pytest.mark.spec("SI-01")
@pytest.mark.parametrize("mode", ["auto", "pin"])
async def test_a_ts_v2_client_against_our_server(mode: str, tmp_path: Path) -> None:
    cache = await trio.to_thread.run_sync(ts_sdk_v2_dir)
    spawned = tmp_path / "spawned"
    argv = [
        "node",
        str(cache / "ts_v2_modern_client.mjs"),
        f"--mode={mode}",
        *spawn_counting(spawned),
    ]
    steps, arrived = await run_peer_client(argv, cache)
    expected = expected_steps(ts=True)
    expected[0].update(mode=mode, server="modern-trio-server")
    assert steps == expected
    # Both modes probe with server/discover on a throwaway sibling, then run
    # the session on a second process.
    assert len(spawned.read_text().split()) == 2
    figure(f"TS v2 client ({mode}) -> our server", step_timings(steps, arrived))
