"""The high-level client: handshake, discovery, cached lists, typed calls, closing.

Every test runs a real ``open_client`` against :class:`FakeServer` (a real
server session with a scripted dispatcher) or a raw peer, over the in-memory
transport, on the autojump clock.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing
from client_fake_server import FakeServer, open_fake, text_result
from helpers import LATEST, open_client_with_raw_server, open_pair, open_raw_client_transport

from trio_mcp import (
    Client,
    HandshakeRefused,
    InvalidPeerResult,
    MCPError,
    RPCError,
    Server,
    SessionClosed,
    open_client,
)
from trio_mcp import types as t
from trio_mcp._client._cache import ListChanged, PaginationError, ToolDefinitionChanged
from trio_mcp._client._calls import ToolCallError
from trio_mcp._client._open import run_client
from trio_mcp.lowlevel import RequestContext, open_session
from trio_mcp.protocol import (
    CancelOrigin,
    Direction,
    RequestObserver,
    RequestRecord,
    RequestState,
    UnsupportedProtocolVersion,
)
from trio_mcp.testing import memory_transport_pair


def tool(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "inputSchema": {"type": "object"}, **extra}


TOOLS = [tool(f"tool{i}") for i in range(5)]


# ------------------------------------------------------------------ handshake


@pytest.mark.spec("LC-07")
async def test_offers_newest_and_accepts_a_counter_offer() -> None:
    server = FakeServer(tools=[], version="2025-03-26")
    async with open_fake(server) as client:
        assert client.protocol_version == "2025-03-26"
        assert client.session.protocol.protocol_version == "2025-03-26"
        assert client.server_info.name == "fake"
    init = server.requests  # initialize is answered by the session itself
    assert all(method != "initialize" for method, _ in init)


@pytest.mark.spec("LC-09")
async def test_refuses_a_version_it_does_not_speak() -> None:
    async with open_raw_client_transport() as (peer, transport):

        async def serve() -> None:
            init = await peer.receive()
            await peer.send(
                {
                    "jsonrpc": "2.0",
                    "id": init["id"],
                    "result": {
                        "protocolVersion": "1999-01-01",
                        "capabilities": {},
                        "serverInfo": {"name": "x", "version": "0"},
                    },
                }
            )

        async with trio.open_nursery() as nursery:
            nursery.start_soon(serve)
            with pytest.raises(UnsupportedProtocolVersion):
                async with open_client(transport, era="legacy"):
                    pytest.fail("the body must not run")
        await peer.wait_eof()
        # Never sent notifications/initialized; closed the transport.
        assert [f.get("method") for f in peer.frames] == ["initialize"]


async def _refuse_initialize(error: dict[str, Any]) -> BaseException:
    """What open_client raises when the server answers initialize with *error*."""
    async with open_raw_client_transport() as (peer, transport):

        async def serve() -> None:
            init = await peer.wait_method("initialize")
            await peer.send({"jsonrpc": "2.0", "id": init["id"], "error": error})

        async with trio.open_nursery() as nursery:
            nursery.start_soon(serve)
            with pytest.raises(MCPError) as refused:
                async with open_client(transport, era="legacy"):
                    pytest.fail("the body must not run")
        await peer.wait_eof()
        assert [f.get("method") for f in peer.frames] == ["initialize"]
    return refused.value


async def test_a_server_of_another_era_refuses_the_handshake() -> None:
    """-32022 naming the server's revisions (a 2026-07-28-only server) is a
    refused handshake that says which revisions the server speaks, on any
    transport; the server's error stays the cause."""
    data = {"supported": ["2026-07-28"], "requested": LATEST}
    error = await _refuse_initialize(
        {"code": -32022, "message": "Unsupported protocol version", "data": data}
    )
    assert isinstance(error, HandshakeRefused)
    assert error.supported == ("2026-07-28",)
    assert str(error).endswith("this server speaks only 2026-07-28")
    assert isinstance(error.__cause__, RPCError)
    assert error.__cause__.code == -32022


MODERN_DISCOVER = {
    "supportedVersions": ["2026-07-28"],
    "capabilities": {},
    "resultType": "complete",
    "ttlMs": 0,
    "cacheScope": "private",
    "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "slow-modern", "version": "1"}},
}


@pytest.mark.spec("SI-14")
@pytest.mark.parametrize("answers_late_probe", [True, False])
async def test_auto_goes_modern_when_a_slow_server_read_the_timed_out_probe(
    autojump_clock: trio.testing.MockClock, answers_late_probe: bool
) -> None:
    """A modern server slower than the probe timeout (a cold start) reads the
    probe first, is in 2026-07-28 from then on (mcp 2.x works so), and refuses
    the fallback initialize with -32022 naming 2026-07-28: the client goes
    modern with a fresh discover, not HandshakeRefused. The server may answer
    the abandoned probe late, or honour its cancel."""
    async with open_raw_client_transport() as (peer, transport):
        refusal = {"code": -32022, "message": "modern only", "data": {"supported": ["2026-07-28"]}}

        async def serve() -> None:
            probe = await peer.wait_method("server/discover")
            init = await peer.wait_method("initialize")
            if answers_late_probe:
                await peer.send({"jsonrpc": "2.0", "id": probe["id"], "result": MODERN_DISCOVER})
            await peer.send({"jsonrpc": "2.0", "id": init["id"], "error": refusal})
            again = await peer.wait_for(
                lambda f: f.get("method") == "server/discover" and f["id"] != probe["id"]
            )
            await peer.send({"jsonrpc": "2.0", "id": again["id"], "result": MODERN_DISCOVER})

        async with trio.open_nursery() as nursery:
            nursery.start_soon(serve)
            async with open_client(transport, probe_timeout=2.0, discover=False) as client:
                assert client.era == "modern"
                assert client.protocol_version == "2026-07-28"
                assert client.server_info.name == "slow-modern"
        methods = [f.get("method") for f in peer.frames]
        assert methods[:4] == [
            "server/discover",
            "notifications/cancelled",
            "initialize",
            "server/discover",
        ], methods
        assert "notifications/initialized" not in methods


async def test_a_probe_answered_not_modern_then_a_refused_initialize_is_refused() -> None:
    """A probe answered with a handshake-era error said "not modern": a later
    -32022 to initialize is a refused handshake, not a reason to go modern."""
    async with open_raw_client_transport() as (peer, transport):

        async def serve() -> None:
            probe = await peer.wait_method("server/discover")
            not_found = {"code": -32601, "message": "Method not found"}
            await peer.send({"jsonrpc": "2.0", "id": probe["id"], "error": not_found})
            init = await peer.wait_method("initialize")
            refusal = {"code": -32022, "message": "no", "data": {"supported": ["2026-07-28"]}}
            await peer.send({"jsonrpc": "2.0", "id": init["id"], "error": refusal})

        async with trio.open_nursery() as nursery:
            nursery.start_soon(serve)
            with pytest.raises(HandshakeRefused):
                async with open_client(transport, discover=False):
                    pytest.fail("the body must not run")
        assert [f.get("method") for f in peer.frames] == ["server/discover", "initialize"]


@pytest.mark.parametrize(
    "error",
    [
        {"code": -32022, "message": "Unsupported protocol version"},  # no data
        {"code": -32022, "message": "Unsupported", "data": {"supported": "2026-07-28"}},
        {"code": -32602, "message": "Bad params", "data": {"supported": ["2026-07-28"]}},
    ],
)
async def test_other_initialize_errors_stay_the_servers_rpc_error(error: dict[str, Any]) -> None:
    refused = await _refuse_initialize(error)
    assert type(refused) is RPCError
    assert refused.code == error["code"]


# ------------------------------------------------------------------ discovery


@pytest.mark.spec("PA-04")
async def test_discovery_follows_every_page_of_every_declared_list() -> None:
    server = FakeServer(
        tools=TOOLS,
        prompts=[{"name": f"p{i}"} for i in range(3)],
        resources=[{"uri": f"file:///r{i}", "name": f"r{i}"} for i in range(4)],
        templates=[{"uriTemplate": "file:///{x}", "name": "x"}],
    )
    async with open_fake(server) as client:
        assert list(client.tools) == [f"tool{i}" for i in range(5)]
        assert list(client.prompts) == ["p0", "p1", "p2"]
        assert len(client.resources) == 4
        assert list(client.resource_templates) == ["file:///{x}"]
        assert client.generation("tools") == 1
    cursors = [getattr(p, "cursor", None) for m, p in server.requests if m == "tools/list"]
    # The cursor is passed back exactly as given (opaque).
    assert cursors == [None, "opaque-2", "opaque-4"]


@pytest.mark.spec("PA-04")
async def test_only_declared_lists_are_fetched() -> None:
    server = FakeServer(tools=TOOLS[:1])
    async with open_fake(server) as client:
        assert client.prompts == {}
        assert client.server_capabilities.prompts is None
    assert server.methods() == ["tools/list"]


@pytest.mark.spec("PA-05")
async def test_empty_string_cursor_is_a_cursor_and_repeats_are_refused() -> None:
    server = FakeServer(tools=[])
    pages = iter(
        [
            {"tools": [tool("a")], "nextCursor": ""},
            {"tools": [tool("b")]},
        ]
    )

    async def listing(ctx: RequestContext) -> Any:
        return next(pages)

    server.overrides["tools/list"] = listing
    async with open_fake(server) as client:
        assert list(client.tools) == ["a", "b"]

        async def looping(ctx: RequestContext) -> Any:
            return {"tools": [], "nextCursor": "same"}

        server.overrides["tools/list"] = looping
        with pytest.raises(PaginationError, match="repeated cursor"):
            await client.refresh("tools")
        assert list(client.tools) == ["a", "b"]  # the old list stays


async def test_discovery_tolerates_method_not_found_for_a_declared_list() -> None:
    server = FakeServer(tools=TOOLS[:1], prompts=[])

    async def refuse(ctx: RequestContext) -> Any:
        raise RPCError(-32601, "no prompts here")

    server.overrides["prompts/list"] = refuse
    async with open_fake(server) as client:
        assert list(client.tools) == ["tool0"]
        assert client.prompts == {}


async def test_discovery_can_be_skipped() -> None:
    server = FakeServer(tools=TOOLS)
    async with open_fake(server, discover=False) as client:
        assert client.tools == {}
        page = await client.list_tools()
        assert [x.name for x in page.tools] == ["tool0", "tool1"]
        assert page.next_cursor == "opaque-2"


# ------------------------------------------------------------ list changes


async def test_list_changed_refreshes_the_cache_and_wakes_waiters() -> None:
    server = FakeServer(tools=TOOLS[:2], prompts=[], resources=[])
    async with open_fake(server) as client, client.events() as events:
        server.lists["tools/list"].append(tool("new"))
        del server.lists["tools/list"][0]
        async with trio.open_nursery() as nursery:
            nursery.start_soon(client.wait_list_changed, "tools")
            await trio.testing.wait_all_tasks_blocked()
            assert server.session is not None
            await server.session.notify("notifications/tools/list_changed")
        assert list(client.tools) == ["tool1", "new"]
        assert client.generation("tools") == 2
        event = events.receive_nowait()
        assert event == ListChanged("tools", added=("new",), removed=("tool0",), changed=())

        # Resources and templates share one notification.
        server.lists["resources/list"].append({"uri": "file:///z", "name": "z"})
        await server.session.notify("notifications/resources/list_changed")
        await client.wait_list_changed("resource_templates")
        assert list(client.resources) == ["file:///z"]


class AddToolOnceListed(RequestObserver):
    """A server-side observer that registers one more tool the moment the
    server has answered its first ``tools/list``: a change that races the
    client's discovery."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.done = False

    def on_transition(self, record: RequestRecord, old: RequestState | None) -> None:
        if (
            not self.done
            and record.direction is Direction.INBOUND
            and record.method == "tools/list"
            and record.state is RequestState.COMPLETED
        ):
            self.done = True

            async def late() -> str:
                return "late"

            self.server.add_tool(late, name="late")


@pytest.mark.spec("SB-01")
async def test_a_modern_change_right_after_discovery_is_not_lost(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # In 2026-07-28 change notices reach only acknowledged listen streams, so
    # the client must hold one before it lists: a change between its list and
    # the acknowledgment would otherwise leave the cache stale for good.
    server = Server("racy")

    @server.tool()
    async def first() -> str:
        return "first"

    observer = AddToolOnceListed(server)
    async with open_pair(server, server_options={"observer": observer}, era="modern") as (
        client,
        _,
    ):
        assert client.era == "modern"
        with trio.fail_after(5):
            while "late" not in client.tools:
                await client.wait_list_changed("tools")
        assert observer.done
        assert sorted(client.tools) == ["first", "late"]
        # Our ids count up in the order the requests were made.
        methods = [r.method for r in sorted(client.session.requests(), key=lambda r: int(r.id))]
        assert methods[:3] == ["server/discover", "subscriptions/listen", "tools/list"], methods


async def test_a_burst_of_list_changed_costs_one_more_refresh() -> None:
    server = FakeServer(tools=TOOLS[:1])
    release = trio.Event()

    async def held(ctx: RequestContext) -> Any:
        await release.wait()
        return server.page("tools/list", ctx.params)

    async with open_fake(server) as client:
        assert server.session is not None
        server.overrides["tools/list"] = held
        await server.session.notify("notifications/tools/list_changed")
        await trio.testing.wait_all_tasks_blocked()  # the first refresh is in flight
        for _ in range(10):
            await server.session.notify("notifications/tools/list_changed")
        await trio.testing.wait_all_tasks_blocked()
        release.set()
        await client.wait_list_changed("tools")
        await client.wait_list_changed("tools")
        await trio.testing.wait_all_tasks_blocked()
        # Discovery, the refresh in flight, and one for the ten that came meanwhile.
        assert server.methods().count("tools/list") == 3
        assert client.generation("tools") == 3


async def test_a_changed_tool_definition_is_reported() -> None:
    server = FakeServer(tools=[tool("deploy", description="safe")])
    async with open_fake(server) as client, client.events() as events:
        first = client.tools["deploy"]
        server.lists["tools/list"][0] = tool("deploy", description="now deletes things")
        await client.refresh("tools")
        seen = [events.receive_nowait(), events.receive_nowait()]
        changed = next(e for e in seen if isinstance(e, ToolDefinitionChanged))
        assert changed.name == "deploy"
        assert changed.first_seen is first
        assert changed.current.description == "now deletes things"
        assert any(isinstance(e, ListChanged) and e.changed == ("deploy",) for e in seen)
        # Unchanged on the next refresh: no new definition event.
        await client.refresh("tools")
        assert isinstance(events.receive_nowait(), ListChanged)
        with pytest.raises(trio.WouldBlock):
            events.receive_nowait()


async def test_a_failed_refresh_keeps_the_old_list() -> None:
    server = FakeServer(tools=TOOLS[:1])
    async with open_fake(server) as client:

        async def broken(ctx: RequestContext) -> Any:
            raise RPCError(-32603, "oops")

        server.overrides["tools/list"] = broken
        assert server.session is not None
        await server.session.notify("notifications/tools/list_changed")
        await trio.testing.wait_all_tasks_blocked()
        assert list(client.tools) == ["tool0"]
        assert client.generation("tools") == 1
        await client.ping()  # the session goes on


async def test_slow_event_readers_lose_events_not_the_session() -> None:
    server = FakeServer(tools=TOOLS[:1])
    async with open_fake(server) as client, client.events(buffer=1) as events:
        await client.refresh("tools")
        await client.refresh("tools")
        assert client.dropped_events == 1
        assert isinstance(events.receive_nowait(), ListChanged)


# ------------------------------------------------------------------- calls


async def test_tool_error_is_a_result_unless_asked() -> None:
    server = FakeServer(tools=[tool("fail")])

    async def fail(ctx: RequestContext, args: dict[str, Any]) -> dict[str, Any]:
        return text_result("disk full", isError=True)

    server.tool_fns["fail"] = fail
    async with open_fake(server) as client:
        result = await client.call_tool("fail")
        assert result.is_error
        with pytest.raises(ToolCallError, match="disk full") as info:
            await client.call_tool("fail", raise_on_error=True)
        assert info.value.result.is_error
        with pytest.raises(RPCError) as rpc:
            await client.call_tool("missing")
        assert rpc.value.code == -32602


SCHEMA = {
    "type": "object",
    "properties": {"sum": {"type": "integer"}},
    "required": ["sum"],
}


@pytest.mark.spec("TL-21")
async def test_structured_content_is_validated_against_output_schema() -> None:
    server = FakeServer(tools=[tool("add", outputSchema=SCHEMA)])
    answers = iter(
        [
            text_result("3", structuredContent={"sum": 3}),
            text_result("x", structuredContent={"sum": "three"}),
            text_result("no structure"),
            text_result("bad", structuredContent={"sum": 1}, isError=True),
        ]
    )

    async def add(ctx: RequestContext, args: dict[str, Any]) -> dict[str, Any]:
        return next(answers)

    server.tool_fns["add"] = add
    async with open_fake(server) as client:
        ok = await client.call_tool("add", {"a": 1, "b": 2})
        assert ok.structured_content == {"sum": 3}
        with pytest.raises(InvalidPeerResult, match="does not match") as info:
            await client.call_tool("add")
        assert any("sum" in e for e in info.value.errors)
        with pytest.raises(InvalidPeerResult, match="structuredContent is missing"):
            await client.call_tool("add")
        # A tool error is not validated.
        assert (await client.call_tool("add")).is_error
        # The validator was compiled once and reused.
        validator = client._parts.cache.output_validator("add")
        assert validator is client._parts.cache.output_validator("add")
        await client.ping()


async def test_a_broken_output_schema_is_a_clear_error() -> None:
    server = FakeServer(tools=[tool("odd", outputSchema={"type": 12})])

    async def odd(ctx: RequestContext, args: dict[str, Any]) -> dict[str, Any]:
        return text_result("x", structuredContent={})

    server.tool_fns["odd"] = odd
    async with open_fake(server) as client:
        with pytest.raises(InvalidPeerResult, match="invalid outputSchema"):
            await client.call_tool("odd")
        assert (await client.call_tool("odd", validate=False)).structured_content == {}


@pytest.mark.spec("PG-02")
async def test_call_tool_with_progress(autojump_clock: trio.testing.MockClock) -> None:
    server = FakeServer(tools=[tool("slow")])

    async def slow(ctx: RequestContext, args: dict[str, Any]) -> dict[str, Any]:
        for i in range(1, 4):
            await trio.sleep(40)  # each under the 60 s idle timeout
            await ctx.report_progress(i, 3, f"step {i}")
        return text_result("done")

    server.tool_fns["slow"] = slow
    seen: list[tuple[float, float | None, str | None]] = []
    async with open_fake(server) as client:
        result = await client.call_tool(
            "slow", on_progress=lambda p: seen.append((p.progress, p.total, p.message))
        )
    assert result.content == [t.TextContent(text="done")]
    assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]


@pytest.mark.spec("CP-03")
async def test_read_get_prompt_complete() -> None:
    server = FakeServer(prompts=[{"name": "greet"}], resources=[])
    async with open_fake(server) as client:
        read = await client.read_resource("file:///x")
        assert read.contents[0].uri == "file:///x"
        prompt = await client.get_prompt("greet", {"who": "you"})
        assert prompt.messages[0].role == "user"
        done = await client.complete(
            t.PromptReference(name="greet"), "who", "yo", context_arguments={"lang": "en"}
        )
        assert done.completion.values == ["yo1", "yo2"]
    params = dict(server.requests)["completion/complete"]
    assert params.context.arguments == {"lang": "en"}


@pytest.mark.spec("CP-03")
async def test_completion_context_dropped_for_old_revisions() -> None:
    server = FakeServer(prompts=[], version="2025-03-26")
    async with open_fake(server) as client:
        await client.complete(t.PromptReference(name="p"), "a", "b", context_arguments={"x": "y"})
    assert dict(server.requests)["completion/complete"].context is None


async def test_resource_updates_stream_subscribes_and_unsubscribes() -> None:
    server = FakeServer(resources=[])
    async with open_fake(server) as client:
        assert server.session is not None
        async with client.resource_updates("file:///dir") as updates:
            await server.session.notify("notifications/resources/updated", {"uri": "file:///dir"})
            await server.session.notify(
                "notifications/resources/updated", {"uri": "file:///dir/sub"}
            )
            await server.session.notify("notifications/resources/updated", {"uri": "file:///other"})
            assert await updates.receive() == "file:///dir"
            assert await updates.receive() == "file:///dir/sub"
            await client.ping()
            with pytest.raises(trio.WouldBlock):
                updates.receive_nowait()
    assert [m for m in server.methods() if "subscribe" in m] == [
        "resources/subscribe",
        "resources/unsubscribe",
    ]


@pytest.mark.spec("LG-03")
async def test_set_logging_level_and_log_sink() -> None:
    server = FakeServer(tools=[])
    received: list[t.LoggingMessageNotificationParams] = []

    async def sink(params: t.LoggingMessageNotificationParams) -> None:
        received.append(params)

    async with open_fake(server, log_handler=sink) as client:
        await client.set_logging_level("warning")
        assert server.session is not None
        await server.session.notify(
            "notifications/message", {"level": "error", "logger": "db", "data": {"x": 1}}
        )
        await client.ping()
        await trio.testing.wait_all_tasks_blocked()
    assert dict(server.requests)["logging/setLevel"].level is t.LoggingLevel.WARNING
    assert [(r.level, r.logger, r.data) for r in received] == [
        (t.LoggingLevel.ERROR, "db", {"x": 1})
    ]


async def test_default_log_sink_uses_python_logging(caplog: pytest.LogCaptureFixture) -> None:
    server = FakeServer(tools=[])
    async with open_fake(server) as client:
        assert server.session is not None
        await server.session.notify(
            "notifications/message", {"level": "warning", "data": "careful"}
        )
        await client.ping()
        await trio.testing.wait_all_tasks_blocked()
    assert any(r.name == "trio_mcp.server_log" and "careful" in r.message for r in caplog.records)


# ----------------------------------------------------------------- closing


@pytest.mark.spec("CN-01")
async def test_closing_with_calls_in_flight_cancels_them_and_tells_the_server(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = FakeServer(tools=[tool("forever")])
    cancelled = trio.Event()

    async def forever(ctx: RequestContext, args: dict[str, Any]) -> dict[str, Any]:
        try:
            await trio.sleep_forever()
        finally:
            cancelled.set()
        raise AssertionError

    server.tool_fns["forever"] = forever
    errors: list[BaseException] = []
    async with open_fake(server, progress_idle_timeout=None) as client:

        async def call() -> None:
            try:
                await client.call_tool("forever")
            except SessionClosed as exc:
                errors.append(exc)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(call)
            nursery.start_soon(call)
            await trio.testing.wait_all_tasks_blocked()
            start = trio.current_time()
            await client.aclose()
            assert trio.current_time() - start < 1.0  # promptly
        await cancelled.wait()
        records = [r for r in client.session.requests() if r.method == "tools/call"]
        assert [r.state for r in records] == [RequestState.CANCELLED] * 2
        assert {r.cancel_origin for r in records} == {CancelOrigin.SHUTDOWN}
        # The server was told: its handlers were cancelled by the peer (us).
        assert server.session is not None
        served = [r for r in server.session.requests() if r.method == "tools/call"]
        assert [r.cancel_origin for r in served] == [CancelOrigin.PEER] * 2
    assert len(errors) == 2


async def test_run_client_for_nursery_start() -> None:
    server = FakeServer(tools=TOOLS[:1])
    client_end, server_end = memory_transport_pair()
    async with (
        open_session(server_end, server.protocol, server),
        trio.open_nursery() as nursery,
    ):
        client: Client = await nursery.start(run_client, client_end)
        assert list(client.tools) == ["tool0"]
        await client.ping()
        await client.aclose()  # run_client returns, the nursery can end
    assert client.session.closed


async def test_client_ends_when_the_server_goes_away() -> None:
    async with open_client_with_raw_server(discover=False) as (peer, client):
        await peer.transport.aclose()
        with trio.fail_after(1):
            await client.session.wait_closed()
        with pytest.raises(SessionClosed):
            await client.ping()
