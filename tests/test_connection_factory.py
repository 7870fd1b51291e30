"""``open_session`` makes its connection with the session's own settings.

The session hands its clock (the Trio run's), its observer, its progress
interval and its frame bound to the :class:`~trio_mcp.protocol.ConnectionFactory`
it was given, once, as it starts: the connection is configured at
construction, and nothing sets its attributes after.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing
from helpers import FnDispatcher, Recorder

from trio_mcp import Server
from trio_mcp.lowlevel import open_session
from trio_mcp.protocol import DEFAULT_MAX_MESSAGE_SIZE, Connection, Role
from trio_mcp.testing import MemoryTransport, memory_transport_pair


class Factory:
    """A ConnectionFactory that keeps the settings it was called with."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def __call__(self, **settings: Any) -> Connection:
        self.calls.append(settings)
        return Connection(Role.SERVER, capabilities={"tools": {}}, **settings)


class BoundedTransport(MemoryTransport):
    """A memory transport with a frame bound of its own (as stdio framing has):
    it offers :class:`trio_mcp.lowlevel.BoundedTransport`."""

    max_message_size = 2048

    def set_max_message_size(self, size: int) -> None:
        self.max_message_size = size


async def test_the_connection_is_made_once_with_the_sessions_settings(
    autojump_clock: trio.testing.MockClock,
) -> None:
    factory = Factory()
    recorder = Recorder()
    ours, peer = memory_transport_pair()
    async with (
        peer,
        open_session(
            ours,
            factory,
            FnDispatcher(),
            observer=recorder,
            progress_interval=2.0,
            max_message_size=5000,
        ) as session,
    ):
        [settings] = factory.calls
        assert sorted(settings) == ["clock", "max_message_size", "observer", "progress_interval"]
        protocol = session.protocol
        assert protocol.observer is recorder
        assert protocol.observing
        assert protocol.progress_interval == 2.0
        assert protocol.max_message_size == 5000
        # The run's clock: the records' timestamps are Trio's time.
        await trio.sleep(7)
        assert protocol.clock() == trio.current_time()
    assert len(factory.calls) == 1


async def test_without_settings_the_connection_has_the_defaults() -> None:
    factory = Factory()
    ours, peer = memory_transport_pair()
    async with peer, open_session(ours, factory, FnDispatcher()) as session:
        protocol = session.protocol
        assert not protocol.observing
        assert protocol.progress_interval == 0
        assert protocol.max_message_size == DEFAULT_MAX_MESSAGE_SIZE


async def test_the_transports_own_bound_is_the_connections_when_none_is_given() -> None:
    to_peer, from_us = trio.open_memory_channel[bytes](8)
    to_us, from_peer = trio.open_memory_channel[bytes](8)
    ours, peer = BoundedTransport(to_peer, from_peer), MemoryTransport(to_us, from_us)
    async with peer, open_session(ours, Factory(), FnDispatcher()) as session:
        assert session.protocol.max_message_size == 2048


async def test_a_servers_factory_is_its_make_protocol() -> None:
    server = Server("factory")
    ours, peer = memory_transport_pair()
    async with peer, open_session(ours, server.make_protocol, server, max_message_size=999) as s:
        assert s.protocol.role is Role.SERVER
        assert s.protocol.max_message_size == 999
        assert s.protocol.local_info["name"] == "factory"


def test_a_connection_instead_of_a_factory_is_a_type_error() -> None:
    ours, _peer = memory_transport_pair()
    with pytest.raises(TypeError, match=r"what makes the connection.*Server.make_protocol"):
        open_session(ours, Connection(Role.SERVER), FnDispatcher())  # type: ignore[arg-type]
