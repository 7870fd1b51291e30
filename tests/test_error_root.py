"""One error root: every exception trio_mcp raises on purpose is an ``MCPError``,
and local and remote protocol errors stay told apart."""

from __future__ import annotations

import importlib

import pytest
import trio
from helpers import open_raw_client_transport
from test_public_api import PUBLIC_MODULES

import trio_mcp
from trio_mcp import types as t
from trio_mcp.protocol import (
    LocalProtocolError,
    MessageTooLarge,
    NotJSON,
    ProtocolError,
    RemoteProtocolError,
    UnsupportedProtocolVersion,
)

EXCEPTIONS = sorted(
    {
        (module, name)
        for module in PUBLIC_MODULES
        for name in importlib.import_module(module).__all__
        if isinstance(value := getattr(importlib.import_module(module), name), type)
        and issubclass(value, BaseException)
    }
)


def test_the_public_namespaces_export_exceptions() -> None:
    names = {name for _, name in EXCEPTIONS}
    assert {"MCPError", "ToolError", "ToolCallError", "UnsupportedProtocolVersion"} <= names


@pytest.mark.parametrize(("module", "name"), EXCEPTIONS, ids=[f"{m}.{n}" for m, n in EXCEPTIONS])
def test_every_exported_exception_is_an_mcp_error(module: str, name: str) -> None:
    assert issubclass(getattr(importlib.import_module(module), name), trio_mcp.MCPError)


def test_the_root_is_one_class_in_every_namespace() -> None:
    from trio_mcp import _errors, protocol

    assert trio_mcp.MCPError is protocol.MCPError is _errors.MCPError


INSTANCES: list[BaseException] = [
    trio_mcp.ToolError("bad input"),
    trio_mcp.ToolCallError("add", t.CallToolResult(content=[], is_error=True)),
    trio_mcp.RPCError(-32601, "Method not found"),
    trio_mcp.SessionClosed("gone"),
    trio_mcp.RequestTimeout("tools/call", 1.0, idle=True),
    trio_mcp.InvalidPeerResult("bad result", ["content: missing"]),
    LocalProtocolError("not now"),
    NotJSON("NaN"),
    RemoteProtocolError("peer broke it"),
    MessageTooLarge(10, 5),
    UnsupportedProtocolVersion("1999-01-01", ("2025-11-25",)),
]


@pytest.mark.parametrize("error", INSTANCES, ids=[type(e).__name__ for e in INSTANCES])
def test_except_mcp_error_catches_it(error: BaseException) -> None:
    with pytest.raises(trio_mcp.MCPError) as info:
        raise error
    assert info.value is error


def test_local_and_remote_protocol_errors_stay_apart() -> None:
    assert issubclass(LocalProtocolError, ProtocolError)
    assert issubclass(RemoteProtocolError, ProtocolError)
    assert not issubclass(LocalProtocolError, RemoteProtocolError)
    assert not issubclass(RemoteProtocolError, LocalProtocolError)
    assert issubclass(NotJSON, LocalProtocolError)
    assert issubclass(MessageTooLarge, RemoteProtocolError)
    assert issubclass(UnsupportedProtocolVersion, RemoteProtocolError)


@pytest.mark.spec("LC-09")
async def test_except_mcp_error_catches_the_version_refusal_of_open_client() -> None:
    async with open_raw_client_transport() as (peer, transport):

        async def serve() -> None:
            init = await peer.receive()
            result = {
                "protocolVersion": "1999-01-01",
                "capabilities": {},
                "serverInfo": {"name": "x", "version": "0"},
            }
            await peer.send({"jsonrpc": "2.0", "id": init["id"], "result": result})

        caught: list[trio_mcp.MCPError] = []
        async with trio.open_nursery() as nursery:
            nursery.start_soon(serve)
            try:
                async with trio_mcp.open_client(transport, era="legacy"):
                    pytest.fail("the body must not run")
            except trio_mcp.MCPError as error:
                caught.append(error)
        await peer.wait_eof()
    [refusal] = caught
    assert isinstance(refusal, UnsupportedProtocolVersion)
    assert refusal.offered == "1999-01-01"


def test_protocol_error_is_abstract() -> None:
    with pytest.raises(TypeError, match="abstract"):
        ProtocolError("which side?")
    assert str(LocalProtocolError("ours")) == "ours"
