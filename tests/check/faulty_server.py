"""Paper Trail over stdio with one lifecycle fault switched on, for ``trio-mcp check``'s tests.

Usage: ``python faulty_server.py FAULT``. The real trio_mcp server runs
unchanged; the fault is a transport wrapped around its stdio channel (or, for
``leaves-child-alive``, a child process started and never ended), so the
library carries no fault switches:

* ``answers-after-cancel``: ``notifications/cancelled`` never reaches the
  session, so a cancelled call runs on and is answered;
* ``crosses-duplicate-ids``: a request reusing an id still in flight is handed
  to the session under a fresh id and its answer renamed back, so one id is
  answered twice;
* ``ignores-eof``: end of input is never reported, so the server keeps running
  (SIGTERM still stops it);
* ``leaves-child-alive``: a ``sleep`` child in the server's process group
  outlives the server;
* ``drops-malformed``: frames that are not JSON are dropped without a reply;
* ``exits-on-malformed``: a frame that is not JSON ends the session (the
  process exits), which the checker's later checks must survive;
* ``pads-ping``: the answer to ``ping`` carries a member besides ``_meta``,
  so it is not the empty result the spec asks for;
* ``holds-empty-listen``: a 2026-07-28 ``subscriptions/listen`` that asks for
  nothing reaches the session as one asking for tool list changes, so it is
  held open, as the other SDKs hold an empty listen.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from typing import Any

import trio

from trio_mcp import serve_session
from trio_mcp.examples.paper_trail import build_server
from trio_mcp.transports import open_stdio_server_transport

FAULTS = (
    "answers-after-cancel",
    "crosses-duplicate-ids",
    "ignores-eof",
    "leaves-child-alive",
    "drops-malformed",
    "exits-on-malformed",
    "holds-empty-listen",
    "pads-ping",
)


def _parse(frame: bytes) -> Any:
    try:
        return json.loads(frame)
    except ValueError:
        return None


class FaultyChannel(trio.abc.Channel[bytes]):
    """The server's stdio channel with *fault* switched on."""

    def __init__(self, inner: trio.abc.Channel[bytes], fault: str) -> None:
        self.inner = inner
        self.fault = fault
        self.in_flight: set[object] = set()
        self.renamed: dict[str, object] = {}
        self.pings: set[object] = set()

    async def receive(self) -> bytes:
        while True:
            try:
                frame = await self.inner.receive()
            except trio.EndOfChannel:
                if self.fault == "ignores-eof":
                    await trio.sleep_forever()
                raise
            message = _parse(frame)
            if self.fault == "drops-malformed" and message is None:
                continue
            if self.fault == "exits-on-malformed" and message is None:
                raise trio.EndOfChannel
            if not isinstance(message, dict):
                return frame
            if self.fault == "holds-empty-listen" and message.get("method") == (
                "subscriptions/listen"
            ):
                params = message.get("params") or {}
                if params.get("notifications") == {}:
                    params["notifications"] = {"toolsListChanged": True}
                    return json.dumps(message).encode()
            if self.fault == "pads-ping" and message.get("method") == "ping":
                rid = message.get("id")
                if isinstance(rid, (int, str)):
                    self.pings.add(rid)
            cancel = message.get("method") == "notifications/cancelled"
            if self.fault == "answers-after-cancel" and cancel:
                continue
            if self.fault == "crosses-duplicate-ids" and "method" in message and "id" in message:
                rid = message["id"]
                if isinstance(rid, (int, str)) and not isinstance(rid, bool):
                    if rid in self.in_flight:
                        fresh = f"crossed-{len(self.renamed)}"
                        self.renamed[fresh] = rid
                        message["id"] = fresh
                        return json.dumps(message).encode()
                    self.in_flight.add(rid)
            return frame

    async def send(self, value: bytes) -> None:
        if self.fault == "pads-ping":
            message = _parse(value)
            rid = message.get("id") if isinstance(message, dict) else None
            if isinstance(rid, (int, str)) and rid in self.pings:
                self.pings.discard(rid)
                if isinstance(message.get("result"), dict):
                    message["result"]["pong"] = True
                    value = json.dumps(message).encode()
        if self.fault == "crosses-duplicate-ids":
            message = _parse(value)
            if isinstance(message, dict) and "method" not in message and "id" in message:
                rid = message["id"]
                if rid in self.renamed:
                    message["id"] = self.renamed.pop(rid)
                    value = json.dumps(message).encode()
                else:
                    self.in_flight.discard(rid)
        await self.inner.send(value)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def main(fault: str) -> None:
    async with open_stdio_server_transport() as transport, trio.open_nursery() as nursery:
        nursery.start_soon(_stop_on_sigterm, nursery.cancel_scope)
        await serve_session(build_server(), FaultyChannel(transport, fault))
        nursery.cancel_scope.cancel()


async def _stop_on_sigterm(scope: trio.CancelScope) -> None:
    with trio.open_signal_receiver(signal.SIGTERM) as signals:
        async for _ in signals:
            scope.cancel()
            return


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in FAULTS:
        raise SystemExit(f"usage: faulty_server.py {'|'.join(FAULTS)}")
    if sys.argv[1] == "leaves-child-alive":
        # Started in this process's group and session, and never ended.
        subprocess.Popen(
            ["sleep", "60"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    trio.run(main, sys.argv[1])
