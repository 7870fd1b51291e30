"""Every public async call documents its cancellation and is a checkpoint; the
session boundary unwraps groups.

Trio's conventions: an async function is a cancel point and a schedule point; a
library must not hand its user an exception group that holds a single real error.
The public async API is enumerated from the public namespaces' ``__all__``, so a
new async function or method is covered without editing this file.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import pytest
import trio
import trio.testing

import trio_mcp
import trio_mcp._transport
import trio_mcp.lowlevel
from trio_mcp.protocol import Connection, Role
from trio_mcp.testing import memory_transport_pair, open_memory_client
from trio_mcp.transports import HttpServerTransport, MemoryEventStore
from trio_mcp.transports._http.server._transport import Stream

#: The public namespaces; ``trio_mcp.lowlevel`` is walked once it exists.
NAMESPACES = (
    "trio_mcp",
    "trio_mcp.lowlevel",
    "trio_mcp.tasks",
    "trio_mcp.extensions",
    "trio_mcp.protocol",
    "trio_mcp.types",
    "trio_mcp.transports",
    "trio_mcp.testing",
)
#: The trio.abc.Channel methods whose cancellation the transport contract states.
CHANNEL_METHODS = frozenset({"send", "receive", "aclose"})


def _is_async(value: object) -> bool:
    """A coroutine function, or an async context manager made by asynccontextmanager."""
    if inspect.iscoroutinefunction(value):
        return True
    return inspect.isasyncgenfunction(getattr(value, "__wrapped__", None))


def _public_objects() -> Iterator[object]:
    for name in NAMESPACES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError:
            continue
        for attr in module.__all__:
            yield getattr(module, attr)


def _public_async() -> dict[str, tuple[type | None, str, Callable[..., Any]]]:
    """Every public async function and method: qualified name -> (owner, name, function)."""
    found: dict[str, tuple[type | None, str, Callable[..., Any]]] = {}
    for obj in _public_objects():
        if inspect.isfunction(obj) and _is_async(obj):
            found[f"{obj.__module__}.{obj.__qualname__}"] = (None, obj.__name__, obj)
        elif inspect.isclass(obj):
            for klass in obj.__mro__:
                if not klass.__module__.startswith("trio_mcp"):
                    continue
                for name, value in vars(klass).items():
                    if not name.startswith("_") and _is_async(value):
                        key = f"{klass.__module__}.{klass.__qualname__}.{name}"
                        found.setdefault(key, (klass, name, value))
    return found


def _interfaces() -> list[type]:
    """The public typing.Protocol classes (Dispatcher, EventStore, ...)."""
    return [
        obj
        for obj in _public_objects()
        if inspect.isclass(obj) and getattr(obj, "_is_protocol", False)
    ]


def _implements(owner: type, interface: type) -> bool:
    """Whether *owner* has every public method of the protocol *interface*."""
    methods = [
        name
        for name, value in vars(interface).items()
        if not name.startswith("_") and callable(value)
    ]
    return bool(methods) and all(callable(getattr(owner, name, None)) for name in methods)


def _documents_cancellation(function: object) -> bool:
    return "Cancellation:" in (inspect.getdoc(function) or "")


def test_the_public_async_api_is_found() -> None:
    found = _public_async()
    # A floor, so that a broken walk cannot pass the next test vacuously.
    assert len(found) > 60
    assert any(key.endswith(".Client.call_tool") for key in found)
    assert any(key.endswith(".check_transport") for key in found)


def test_every_public_async_call_documents_cancellation() -> None:
    assert _documents_cancellation(trio_mcp._transport)  # the transport contract
    interfaces = _interfaces()
    undocumented = []
    for key, (owner, name, function) in sorted(_public_async().items()):
        if _documents_cancellation(function):
            continue
        if owner is not None and name in CHANNEL_METHODS and issubclass(owner, trio.abc.Channel):
            continue  # stated once, in the transport contract
        if owner is not None and any(
            owner is not interface
            and name in vars(interface)
            and _documents_cancellation(vars(interface)[name])
            and _implements(owner, interface)
            for interface in interfaces
        ):
            continue  # documented on the interface it implements
        undocumented.append(key)
    assert undocumented == []


server = trio_mcp.Server("contract", version="1.0")


@server.tool()
async def echo(text: str) -> str:
    return text


@server.resource("note://a")
async def note() -> str:
    return "a"


@server.prompt()
async def greet() -> str:
    return "hello"


ROOTS = [trio_mcp.types.Root(uri="file:///tmp")]

#: Calls that return at once (or after one cheap round trip) on a live client, by
#: the name of the public async function they make. Each must be a checkpoint.
CheapCall = Callable[[trio_mcp.Client], Awaitable[object]]
CHEAP_CALLS: dict[str, CheapCall] = {
    "Client.ping": lambda c: c.ping(),
    "Client.call_tool": lambda c: c.call_tool("echo", {"text": "x"}),
    "Client.list_tools": lambda c: c.list_tools(),
    "Client.read_resource": lambda c: c.read_resource("note://a"),
    "Client.get_prompt": lambda c: c.get_prompt("greet"),
    "Client.refresh": lambda c: c.refresh("tools"),
    "Client.set_logging_level": lambda c: c.set_logging_level("info"),
    "Client.subscribe": lambda c: c.subscribe("note://a"),
    "Client.unsubscribe": lambda c: c.unsubscribe("note://a"),
    "Client.notify_roots_changed": lambda c: c.notify_roots_changed(),
    "Client.set_roots": lambda c: c.set_roots(ROOTS),
    "Session.request": lambda c: c.session.request("ping"),
    "Session.notify": lambda c: c.session.notify("notifications/roots/list_changed"),
    "Session.wait_inbound_settled": lambda c: c.session.wait_inbound_settled(),
}


def test_the_cheap_calls_are_public_async_functions() -> None:
    names = {key.rsplit(".", 2)[-2] + "." + key.rsplit(".", 1)[-1] for key in _public_async()}
    assert set(CHEAP_CALLS) <= names


#: The cheap calls of the handshake era only (2026-07-28 has no
#: resources/subscribe, ping or roots/list_changed).
HANDSHAKE_ONLY = {"Client.subscribe", "Client.unsubscribe", "Session.request", "Session.notify"}
CHEAP_ROWS = [
    pytest.param(call, era, id=f"{name}-{era}")
    for name, call in CHEAP_CALLS.items()
    for era in ("legacy", "modern")
    if era == "legacy" or name not in HANDSHAKE_ONLY
]


@pytest.mark.parametrize(("call", "era"), CHEAP_ROWS)
async def test_public_calls_are_checkpoints(call: CheapCall, era: str) -> None:
    async with open_memory_client(server, roots=ROOTS, era=era) as client:
        with trio.testing.assert_checkpoints():
            await call(client)


async def test_closing_calls_are_checkpoints_even_when_already_closed() -> None:
    async with open_memory_client(server) as client:
        session = client.session
        for _ in range(2):
            with trio.testing.assert_checkpoints():
                await client.aclose()
        for _ in range(2):
            with trio.testing.assert_checkpoints():
                await session.aclose()
        with trio.testing.assert_checkpoints():
            await session.wait_closed()


async def test_the_memory_event_store_calls_are_checkpoints() -> None:
    store = MemoryEventStore()
    with trio.testing.assert_checkpoints():
        event_id = await store.store_event("s", "1", b"{}")
    with trio.testing.assert_checkpoints():
        assert await store.events_after("s", event_id) == ("1", [])
    with trio.testing.assert_checkpoints():
        await store.forget_session("s")


@asynccontextmanager
async def _logging_server_session() -> AsyncIterator[tuple[trio_mcp.lowlevel.Session, list[bytes]]]:
    """A server session that declares logging, after a real handshake, plus the
    frames its client end received."""
    client_end, server_end = memory_transport_pair()
    protocol = partial(Connection, Role.SERVER, capabilities={"logging": {}})
    seen: list[bytes] = []

    class Recorder(trio_mcp.lowlevel.RequestObserver):
        def on_frame(
            self, direction: trio_mcp.lowlevel.FrameDirection, data: bytes, at: float
        ) -> None:
            if direction is trio_mcp.lowlevel.FrameDirection.IN:
                seen.append(data)

    async with (
        trio_mcp.lowlevel.open_session(server_end, protocol, server) as session,
        trio_mcp.open_client(client_end, observer=Recorder(), era="legacy") as client,
    ):
        await client.ping()  # the server has seen notifications/initialized by now
        yield session, seen


async def test_notify_is_a_checkpoint_and_sends_nothing_when_already_cancelled() -> None:
    async with _logging_server_session() as (session, seen):
        with trio.testing.assert_checkpoints():
            await session.notify("notifications/message", {"level": "info", "data": "sent"})
        with trio.CancelScope() as scope:
            scope.cancel()
            await session.notify("notifications/message", {"level": "info", "data": "never"})
        await session.request("ping")  # everything queued before it has been delivered
        assert any(b'"sent"' in frame for frame in seen)
        assert not any(b'"never"' in frame for frame in seen)


async def test_an_error_in_the_body_is_not_wrapped_in_a_group() -> None:
    a, _b = memory_transport_pair()
    with pytest.raises(ZeroDivisionError):
        async with trio_mcp.lowlevel.open_session(a, server.make_protocol, server):
            1 / 0  # noqa: B018 - the error under test


async def test_a_cancelled_body_stays_cancelled(autojump_clock: trio.abc.Clock) -> None:
    a, _b = memory_transport_pair()
    with trio.move_on_after(1) as scope:
        async with trio_mcp.lowlevel.open_session(a, server.make_protocol, server):
            await trio.sleep_forever()
    assert scope.cancelled_caught


@pytest.mark.spec("PG-03")
async def test_report_progress_is_a_checkpoint_with_or_without_a_token() -> None:
    checked: list[bool] = []
    progress_server = trio_mcp.Server("progress", version="1.0")

    @progress_server.tool()
    async def report(ctx: trio_mcp.Context) -> str:
        # With a token the notification goes through the queue's no-yield fast
        # path; the call must still be a cancel point and a schedule point.
        with trio.testing.assert_checkpoints():
            await ctx.report_progress(1, 2)
        checked.append(True)
        return "ok"

    async with open_memory_client(progress_server) as client:
        await client.call_tool("report", on_progress=lambda p: None)  # with a token
        await client.call_tool("report")  # without one
    assert checked == [True, True]


async def test_a_loop_that_only_reports_progress_can_be_cancelled() -> None:
    looped: list[int] = []
    sessions: list[trio_mcp.lowlevel.Session] = []
    busy_server = trio_mcp.Server("busy", version="1.0")

    @busy_server.tool()
    async def spin(ctx: trio_mcp.Context) -> str:
        sessions.append(ctx.session)
        step = 0
        while True:  # no await but report_progress: it must let the cancel in
            step += 1
            looped.append(step)
            await ctx.report_progress(step)

    async with open_memory_client(busy_server) as client:
        with trio.CancelScope() as scope:

            def stop_after_three(progress: trio_mcp.lowlevel.Progress) -> None:
                if progress.progress >= 3:
                    scope.cancel()

            with trio.fail_after(10):
                await client.call_tool("spin", on_progress=stop_after_three)
        assert scope.cancelled_caught
        with trio.fail_after(10):
            # The peer's cancel reached the spinning handler: it stops, and the
            # server is still responsive.
            await sessions[0].wait_inbound_settled()
            await client.ping()
        (record,) = [r for r in sessions[0].requests() if r.method == "tools/call"]
        assert record.state is trio_mcp.lowlevel.RequestState.CANCELLED
        assert record.cancel_origin is trio_mcp.lowlevel.CancelOrigin.PEER
    assert len(looped) >= 3


async def test_the_http_server_transport_closing_calls_are_checkpoints() -> None:
    transport = HttpServerTransport(None)
    for _ in range(2):
        with trio.testing.assert_checkpoints():
            await transport.aclose()
    with trio.testing.assert_checkpoints():
        await transport.wait_closed()


async def test_priming_without_an_event_store_is_a_checkpoint() -> None:
    transport = HttpServerTransport(None)
    with trio.testing.assert_checkpoints():
        assert await transport.prime(Stream("s1")) is None
