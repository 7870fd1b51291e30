"""Shutdown over stdio: exit on end of input (idle, and with a call in flight), on
SIGTERM and when the parent is SIGKILLed, within the bound; no process of the
server's group or session left, and nothing but JSON-RPC on stdout.

Spec: SI-05, SI-10, SI-11, LC-15, LC-16, LC-17.
"""

from __future__ import annotations

import signal
import sys

import trio

from .._definition import Check
from .._model import STDIO, CheckFailed, CheckSkipped
from .._probe import Probe
from .._stdio import StdioWire, leftovers

#: How long leftover processes are given to end after the server exited.
LEFTOVER_WAIT = 1.0


async def _open(probe: Probe) -> StdioWire:
    wire = await probe.open()
    if probe.era == "modern":
        await probe.still_answers(wire)
    assert isinstance(wire, StdioWire)
    return wire


async def _exit_after_eof(probe: Probe, wire: StdioWire, what: str) -> float:
    started = trio.current_time()
    await wire.close_input()
    status = await wire.wait_exit(probe.options.exit_timeout)
    if status is None:
        raise CheckFailed(
            f"{what}: still running {probe.options.exit_timeout:g}s after end of input"
        )
    elapsed = trio.current_time() - started
    await _settled_leftovers(probe, wire, f"end of input, {what}")
    return elapsed


async def _settled_leftovers(probe: Probe, wire: StdioWire, how: str) -> None:
    """Note what of the exited server's group or session still runs (a moment
    later), before the connection's end kills it; ``shutdown.no-leftovers`` reads it."""
    left = leftovers(wire.pid)
    with trio.move_on_after(LEFTOVER_WAIT):
        while left:
            await trio.sleep(0.05)
            left = leftovers(wire.pid)
    wire.note("--", f"left in the server's group or session: {_describe(left) or 'nothing'}")
    probe.findings.setdefault("exits", []).append((wire, how, left, _describe(left)))


async def end_of_input(probe: Probe) -> str:
    idle = await _exit_after_eof(probe, await _open(probe), "idle")
    try:
        tool = await probe.slow_tool()
    except CheckSkipped as skipped:
        return f"exited {idle:.2f}s after end of input when idle (in flight not checked: {skipped})"
    name = tool.name
    wire = await _open(probe)
    await probe.start("tools/call", {"name": name, "arguments": tool.arguments}, wire=wire)
    await wire.quiet(0.2)
    busy = await _exit_after_eof(probe, wire, f"with {name} in flight")
    return f"exited {idle:.2f}s after end of input when idle, {busy:.2f}s with {name} in flight"


async def sigterm(probe: Probe) -> str:
    wire = await _open(probe)
    started = trio.current_time()
    wire.signal(signal.SIGTERM)
    status = await wire.wait_exit(probe.options.exit_timeout)
    if status is None:
        raise CheckFailed(f"still running {probe.options.exit_timeout:g}s after SIGTERM")
    elapsed = trio.current_time() - started
    await _settled_leftovers(probe, wire, "SIGTERM")
    return f"exited {elapsed:.2f}s after SIGTERM (status {status})"


#: The parent ``shutdown.parent-death`` kills: it starts the server with a pipe
#: of its own as the server's stdin (as a host does) and relays its input to it;
#: the server's stdout is the checker's.
RELAY = """
import subprocess, sys
child = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE)
for line in iter(sys.stdin.buffer.readline, b""):
    child.stdin.write(line)
    child.stdin.flush()
child.stdin.close()
child.wait()
"""


def _children(parent: int) -> list[int]:
    """The processes whose parent is *parent* (Linux ``/proc``; elsewhere none)."""
    found = []
    for pid in leftovers(parent):
        try:
            with open(f"/proc/{pid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == parent:
            found.append(pid)
    return found


async def parent_death(probe: Probe) -> str:
    wire = await probe.open_under((sys.executable, "-c", RELAY))
    assert isinstance(wire, StdioWire)
    if probe.era == "modern":
        await probe.still_answers(wire)
    # The server is the relay's child; what it leaves behind is
    # shutdown.no-leftovers' concern, not this check's.
    server = _children(wire.pid)
    if not server:
        raise CheckSkipped("the server's process could not be told apart from its parent's")
    # A call in flight is what keeps a server that never reads its end of
    # input alive (an idle one may exit for want of anything to do).
    busy = ""
    try:
        tool = await probe.slow_tool()
    except CheckSkipped:
        busy = " (idle: no slow tool to keep in flight)"
    else:
        await probe.start("tools/call", {"name": tool.name, "arguments": tool.arguments}, wire=wire)
        await wire.quiet(0.2)
        busy = f" with {tool.name} in flight"
    started = trio.current_time()
    wire.signal(signal.SIGKILL)
    alive = server
    with trio.move_on_after(probe.options.exit_timeout):
        while alive:
            await trio.sleep(0.05)
            alive = [pid for pid in server if pid in leftovers(wire.pid)]
    if alive:
        raise CheckFailed(
            f"still running {probe.options.exit_timeout:g}s after its parent was SIGKILLed"
            f"{busy}: {_describe(alive)}"
        )
    elapsed = trio.current_time() - started
    wire.note("--", f"the server ({', '.join(map(str, server))}) exited after its parent died")
    return f"exited {elapsed:.2f}s after its parent was SIGKILLed{busy} (its stdin ended)"


def _describe(pids: list[int]) -> str:
    parts = []
    for pid in pids[:5]:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                command = cmdline.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            command = "?"
        parts.append(f"{pid} ({command[:60]})")
    return ", ".join(parts)


async def no_leftovers(probe: Probe) -> str:
    exits = [
        e for e in probe.findings.get("exits", []) if e[0].pid in probe.findings["pids"][probe.era]
    ]
    if not exits:  # no server of this era exited by itself yet: end one
        wire = await _open(probe)
        await wire.close_input()
        how = "end of input"
        if await wire.wait_exit(probe.options.exit_timeout) is None:
            wire.signal(signal.SIGTERM)
            how = "SIGTERM"
            if await wire.wait_exit(probe.options.exit_timeout) is None:
                raise CheckSkipped("the server exits neither on end of input nor on SIGTERM")
        await _settled_leftovers(probe, wire, how)
        exits = probe.findings["exits"][-1:]
    for wire, how, left, described in exits:
        if left:
            if wire not in probe.wires:
                probe.wires.append(wire)  # its frames show what happened
            raise CheckFailed(
                f"after server {wire.pid} exited ({how}), {len(left)} process(es) of its group or "
                f"session still ran {LEFTOVER_WAIT:g}s later: {described}"
            )
    return f"{len(exits)} server exit(s), nothing of their process groups or sessions left"


async def clean_stdout(probe: Probe) -> str:
    wires: list[StdioWire] = [
        w
        for w in probe.findings.get("stdio-wires", [])
        if w.pid in probe.findings["pids"][probe.era]
    ]
    if not wires:
        wires = [await _open(probe)]
        await probe.request("tools/list", wire=wires[0])
    junk = [line for w in wires for line in w.junk]
    probe.wires.extend(w for w in wires if w.junk and w not in probe.wires)
    if junk:
        raise CheckFailed(f"{len(junk)} line(s) on stdout are not JSON-RPC, the first: {junk[0]!r}")
    lines = sum(len(w.received) for w in wires)
    return f"{lines} lines from {len(wires)} server(s) on stdout, every one a JSON-RPC message"


ONLY_STDIO = frozenset({STDIO})
CHECKS = (
    Check(
        "shutdown.end-of-input",
        "exit on end of input, idle and with a call in flight",
        ("SI-10", "SI-11", "LC-16"),
        end_of_input,
        transports=ONLY_STDIO,
        fresh=True,
    ),
    Check(
        "shutdown.sigterm",
        "exit on SIGTERM",
        ("LC-16", "SI-10"),
        sigterm,
        transports=ONLY_STDIO,
        fresh=True,
    ),
    Check(
        "shutdown.parent-death",
        "exit when the parent is SIGKILLed",
        ("SI-10", "SI-11"),
        parent_death,
        transports=ONLY_STDIO,
        fresh=True,
    ),
    Check(
        "shutdown.no-leftovers",
        "no process of the server's group or session left",
        ("LC-16", "SI-10"),
        no_leftovers,
        transports=ONLY_STDIO,
        fresh=True,
        last=True,
    ),
    Check(
        "shutdown.clean-stdout",
        "nothing but JSON-RPC on stdout",
        ("SI-05", "SI-02"),
        clean_stdout,
        transports=ONLY_STDIO,
        fresh=True,
        last=True,
    ),
)
