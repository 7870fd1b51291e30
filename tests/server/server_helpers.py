"""Helpers of the server-feature tests (tests/server/).

* :func:`everything` builds the ``trio_mcp.examples.everything`` server.
* :func:`open_raw` serves a ``Server`` with :func:`~trio_mcp.serve_session`
  (so list-changed delivery runs) to a raw JSON peer, after a handshake.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import trio
from helpers import LATEST, RawPeer

from trio_mcp import Server, serve_session
from trio_mcp.examples import everything as _everything
from trio_mcp.lowlevel import Session
from trio_mcp.testing import memory_transport_pair

ROOT = Path(__file__).resolve().parents[2]
EVERYTHING = ROOT / "examples" / "everything.py"
#: The spawned server imports this tree's trio_mcp.
EVERYTHING_ENV = {"PYTHONPATH": str(ROOT / "src")}
#: The example's module, for the constants the tests compare with (its PIXEL).
everything_module = _everything


def everything(page_size: int | None = None) -> Server:
    """A fresh ``trio_mcp.examples.everything`` server."""
    server: Server = everything_module.build_server(page_size=page_size)
    return server


@asynccontextmanager
async def open_raw(
    server: Server, version: str | None = LATEST
) -> AsyncIterator[tuple[RawPeer, Session]]:
    """*server* served by ``serve_session`` to a raw peer (handshaken at *version*)."""
    peer_end, server_end = memory_transport_pair()
    peer = RawPeer(peer_end)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(peer.collect)
        session: Session = await nursery.start(serve_session, server, server_end)
        if version is not None:
            await peer.handshake_as_client(version)
        yield peer, session
        await session.aclose()
        await peer.wait_eof()


def error_code(frame: dict[str, Any]) -> int:
    assert "error" in frame, frame
    code: int = frame["error"]["code"]
    return code
