"""Extensions and custom methods: what registration refuses, and custom
requests, notifications and declarations in both eras over the memory pair
(HTTP: tests/transports/http/test_http_extensions.py; stdio: the example's
tests, tests/test_example_extension.py)."""

from __future__ import annotations

from typing import Any, Literal

import attrs
import pytest
import trio
import trio.testing

from trio_mcp import Context, RequestTimeout, RPCError, Server
from trio_mcp.extensions import Extension, missing_capabilities
from trio_mcp.lowlevel import CancelOrigin, Direction, RequestContext, RequestState, Session
from trio_mcp.protocol import LocalProtocolError, Progress
from trio_mcp.testing import open_memory_client

ERAS = pytest.mark.parametrize("era", ["legacy", "modern"])
TASKS = "io.modelcontextprotocol/tasks"
Era = Literal["legacy", "modern"]


async def echo(params: dict[str, Any], ctx: RequestContext) -> dict[str, Any]:
    return {"echo": params.get("text")}


def extension(identifier: str = "com.example/shout", **options: Any) -> Extension:
    ext = Extension(identifier, {"loud": True}, **options)
    ext.add_request(f"{identifier}/do" if identifier != "com.example/shout" else identifier, echo)
    return ext


# ------------------------------------------------------------------ refusals


@pytest.mark.spec("ME-16")
@pytest.mark.parametrize(
    "identifier", ["shout", "example/shout", "com.example", "com.example/", "/shout", "com. x/y"]
)
def test_a_malformed_identifier_is_refused(identifier: str) -> None:
    with pytest.raises(ValueError, match="reverse-DNS prefix"):
        Extension(identifier)


def test_a_duplicate_identifier_is_refused() -> None:
    server = Server("x")
    server.add_extension(extension())
    with pytest.raises(ValueError, match="already installed"):
        server.add_extension(Extension("com.example/shout"))


def test_a_method_answered_twice_is_refused() -> None:
    server = Server("x")
    server.add_extension(extension())
    other = Extension("org.example/other")
    other.add_request("com.example/shout", echo)
    with pytest.raises(ValueError, match=r"already answered by the extension com\.example/shout"):
        server.add_extension(other)
    with pytest.raises(ValueError, match="already answered"):
        server.on_request("com.example/shout")(echo)
    ext = Extension("org.example/twice")
    ext.add_request("org.example/m", echo)
    with pytest.raises(ValueError, match="already has a method"):
        ext.add_request("org.example/m", echo)


@pytest.mark.parametrize("method", ["tools/call", "initialize", "ping", "notifications/message"])
def test_a_core_method_is_never_redefined(method: str) -> None:
    server = Server("x")
    with pytest.raises(ValueError, match="core MCP method"):
        server.on_request(method)(echo)
    with pytest.raises(ValueError, match="core MCP method"):
        server.on_notification(method)(echo)
    ext = Extension("com.example/bad")
    ext.add_request(method, echo)
    with pytest.raises(ValueError, match="core MCP method"):
        server.add_extension(ext)


def test_a_missing_dependency_is_refused() -> None:
    server = Server("x")
    dependent = Extension("com.example/loud", depends_on=["com.example/shout"])
    with pytest.raises(ValueError, match=r"depends on com\.example/shout; install it first"):
        server.add_extension(dependent)
    server.add_extension(extension())
    server.add_extension(dependent)
    assert list(server.extensions) == [TASKS, "com.example/shout", "com.example/loud"]


def test_the_tasks_extension_is_installed_through_the_same_point() -> None:
    server = Server("x")
    tasks = server.extensions[TASKS]
    assert set(tasks.handlers) == {
        "tasks/get",
        "tasks/result",
        "tasks/list",
        "tasks/cancel",
        "tasks/update",
    }
    # Its core rows are its own: no other extension answers them...
    thief = Extension("com.example/thief")
    thief.add_request("tasks/get", echo)
    with pytest.raises(ValueError, match="core MCP method"):
        server.add_extension(thief)
    # Declared in 2026-07-28 only while a tool may run as a task, never in initialize.
    assert "extensions" not in server.capabilities()
    assert "extensions" not in server.modern_capabilities()

    @server.tool(task_support="optional")
    async def slow() -> str:
        return "done"

    assert "extensions" not in server.capabilities()
    assert server.modern_capabilities()["extensions"] == {TASKS: {}}
    # One may depend on it.
    server.add_extension(Extension("com.example/on-tasks", depends_on=[TASKS]))
    assert server.modern_capabilities()["extensions"] == {TASKS: {}, "com.example/on-tasks": {}}


def test_an_extension_is_installed_whole_or_not_at_all() -> None:
    server = Server("x")
    server.on_request("org.example/taken")(echo)
    half = Extension("com.example/half")
    half.add_request("com.example/fine", echo)
    half.add_request("org.example/taken", echo)
    with pytest.raises(ValueError, match="already answered"):
        server.add_extension(half)
    # Nothing of it is there: not its identifier, not its good method.
    assert "com.example/half" not in server.extensions
    assert "extensions" not in server.capabilities()
    server.on_request("com.example/fine")(echo)  # still free


def test_settings_and_requires_must_be_objects() -> None:
    with pytest.raises(TypeError, match="JSON object"):
        Extension("com.example/x", ["loud"])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="capabilities object"):
        Extension("com.example/x", requires="sampling")  # type: ignore[arg-type]


def test_missing_capabilities_names_what_is_missing() -> None:
    required: dict[str, Any] = {"sampling": {}, "extensions": {"com.example/shout": {}}}
    assert missing_capabilities(required, {"sampling": {}}) == {
        "extensions": {"com.example/shout": {}}
    }
    assert (
        missing_capabilities(required, {"sampling": {}, "extensions": {"com.example/shout": {}}})
        == {}
    )


# --------------------------------------------------------- both eras, memory


@attrs.frozen
class Shout:
    text: str


@attrs.frozen
class Shouted:
    text: str
    length: int


def shout_server(heard: list[Any]) -> Server:
    server = Server("shout")
    shout = Extension("com.example/shout", {"loud": True})

    @shout.on_request("com.example/shout")
    async def do_shout(params: dict[str, Any], ctx: RequestContext) -> dict[str, Any]:
        await ctx.session.notify("com.example/shouted", {"text": params["text"]}, custom=True)
        return {"text": params["text"].upper()}

    @shout.on_notification("com.example/whisper")
    def whisper(params: dict[str, Any], session: Session) -> None:
        heard.append(params["text"])

    server.add_extension(shout)

    @server.on_request("com.example/typed", params_type=Shout, result_type=Shouted)
    def typed(params: Shout, ctx: RequestContext) -> Shouted:
        return Shouted(params.text.upper(), len(params.text))

    @server.on_request("com.example/declares")
    def declares(params: dict[str, Any], ctx: RequestContext) -> dict[str, Any]:
        return {"declared": ctx.peer_declares("com.example/client-side")}

    @server.tool()
    async def asks(ctx: Context) -> bool:
        return ctx.client_declares("com.example/client-side")

    return server


@ERAS
async def test_a_custom_request_a_notification_and_the_declaration(era: Era) -> None:
    heard: list[Any] = []
    shouted: list[Any] = []
    server = shout_server(heard)
    async with open_memory_client(
        server,
        era=era,
        custom_notifications={"com.example/shouted": lambda p, s: shouted.append(p["text"])},
    ) as client:
        assert client.server_extensions == {"com.example/shout": {"loud": True}}
        if era == "legacy":
            assert client.initialize_result is not None
            caps = client.initialize_result.capabilities
        else:
            assert client.discover_result is not None
            caps = client.discover_result.capabilities
        assert caps.extensions == {"com.example/shout": {"loud": True}}
        result = await client.call("com.example/shout", {"text": "hi"})
        assert result["text"] == "HI"
        typed = await client.call("com.example/typed", Shout("abc"), result_type=Shouted)
        assert typed == Shouted("ABC", 3)
        await client.notify("com.example/whisper", {"text": "psst"})
        with pytest.raises(RPCError) as unknown:
            await client.call("com.example/nothing", {})
        assert unknown.value.code == -32601
        records = [r for r in client.session.requests() if r.method.startswith("com.example/")]
        await client.ping()  # the notification has been read by now
    assert shouted == ["hi"]
    assert heard == ["psst"]
    assert [r.state for r in records] == [
        RequestState.COMPLETED,
        RequestState.COMPLETED,
        RequestState.FAILED,
    ]


@ERAS
async def test_handlers_ask_whether_the_client_declared_an_extension(era: Era) -> None:
    mine = Extension("com.example/client-side", {"v": 1})
    async with open_memory_client(shout_server([]), era=era, extensions=[mine]) as client:
        assert (await client.call("com.example/declares"))["declared"] is True
        assert (await client.call_tool("asks", {})).structured_content == {"result": True}
    async with open_memory_client(shout_server([]), era=era) as client:
        assert (await client.call("com.example/declares"))["declared"] is False


@ERAS
async def test_an_extension_that_requires_a_declaration(era: Era) -> None:
    server = Server("x")
    strict = Extension("com.example/strict", requires={"extensions": {"com.example/strict": {}}})
    strict.add_request("com.example/strict", echo)
    server.add_extension(strict)
    async with open_memory_client(server, era=era) as client:
        with pytest.raises(RPCError) as refused:
            await client.call("com.example/strict", {"text": "x"})
    if era == "modern":
        # 2026-07-28: per request, -32021 naming what is missing.
        assert refused.value.code == -32021
        assert refused.value.data == {
            "requiredCapabilities": {"extensions": {"com.example/strict": {}}}
        }
    else:
        assert refused.value.code == -32601
    declared = Extension("com.example/strict")
    async with open_memory_client(server, era=era, extensions=[declared]) as client:
        answer = await client.call("com.example/strict", {"text": "x"})
    assert answer["echo"] == "x"


async def test_a_server_request_to_the_client_in_the_handshake_era_only() -> None:
    server = Server("x")

    @server.tool()
    async def ask_client(ctx: Context) -> str:
        answer = await ctx.session.request("org.example/who", {"q": 1}, custom=True)
        return str(answer["name"])

    def who(params: dict[str, Any], ctx: RequestContext) -> dict[str, Any]:
        return {"name": f"client-{params['q']}"}

    async with open_memory_client(
        server, era="legacy", custom_requests={"org.example/who": who}
    ) as client:
        result = await client.call_tool("ask_client", {})
        assert result.content[0].text == "client-1"  # type: ignore[union-attr]

    async with open_memory_client(
        server, era="modern", custom_requests={"org.example/who": who}
    ) as client:
        # 2026-07-28 has no server-to-client requests: the server's own error.
        result = await client.call_tool("ask_client", {})
        assert result.is_error


@ERAS
async def test_call_has_the_progress_timeout_and_cancel_semantics_of_every_request(
    era: Era, autojump_clock: trio.testing.MockClock
) -> None:
    server = Server("x")

    @server.on_request("org.example/slow")
    async def slow(params: dict[str, Any], ctx: RequestContext) -> dict[str, Any]:
        for step in range(1, 4):
            await ctx.report_progress(step, 3)
            await trio.sleep(1)
        if params.get("forever"):
            await trio.sleep_forever()
        return {"done": True}

    progress: list[Progress] = []
    async with open_memory_client(server, era=era) as client:
        done = await client.call("org.example/slow", {}, on_progress=progress.append)
        assert done["done"] is True
        assert [p.progress for p in progress] == [1, 2, 3]
        with pytest.raises(RequestTimeout):
            await client.call("org.example/slow", {"forever": True}, progress_idle_timeout=5)
        with trio.move_on_after(1):
            await client.call("org.example/slow", {"forever": True})
        records = [
            r
            for r in client.session.requests()
            if r.method == "org.example/slow" and r.direction is Direction.OUTBOUND
        ]
    assert [r.state for r in records] == [
        RequestState.COMPLETED,
        RequestState.CANCELLED,
        RequestState.CANCELLED,
    ]
    assert records[1].cancel_origin is CancelOrigin.DEADLINE
    assert records[2].cancel_origin is CancelOrigin.DEADLINE


async def test_sending_a_core_method_by_mistake_stays_a_local_error() -> None:
    async with open_memory_client(Server("x"), era="legacy") as client:
        with pytest.raises(LocalProtocolError):
            await client.session.request("no/such/method")
