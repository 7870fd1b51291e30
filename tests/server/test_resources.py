"""Resources: listing, templates, reading, not-found, subscriptions, list changes."""

from __future__ import annotations

import base64

import pytest
import trio
from helpers import LATEST, settle
from server_helpers import error_code, everything, everything_module, open_raw

from trio_mcp import RPCError, Server
from trio_mcp import types as t
from trio_mcp.testing import open_memory_client


@pytest.mark.spec("RS-01")
async def test_resources_capability_follows_the_registry() -> None:
    assert everything().capabilities()["resources"] == {"subscribe": True, "listChanged": True}
    assert "resources" not in Server("x").capabilities()
    assert (
        Server("x", subscribe=False, list_changed=False, features=("resources",)).capabilities()[
            "resources"
        ]
        == {}
    )
    async with open_raw(Server("x")) as (peer, _):
        assert error_code(await peer.request("resources/list")) == -32601
    # Without subscribe declared, subscribing is refused on the wire.
    quiet = Server("x", subscribe=False)
    quiet.add_resource("a://b", _text)
    async with open_raw(quiet) as (peer, _):
        assert error_code(await peer.request("resources/subscribe", {"uri": "a://b"})) == -32601


async def _text() -> str:
    return "text"


@pytest.mark.spec("RS-02")
@pytest.mark.spec("RS-14")
async def test_list_templates_and_read() -> None:
    async with open_memory_client(everything()) as client:
        resources = (await client.session.request("resources/list")).resources
        templates = (await client.session.request("resources/templates/list")).resource_templates
        config = await client.read_resource("config://app")
        note = await client.read_resource("note://welcome")
        colour = await client.read_resource("colour://red/dark%20ish")
    assert [(r.uri, r.name, r.mime_type) for r in resources] == [
        ("config://app", "config", "application/json"),
        ("image://pixel", "pixel_resource", "image/png"),
    ]
    assert resources[0].title == "App config"
    assert resources[0].description == "The application's configuration."
    assert [tp.uri_template for tp in templates] == ["note://{name}", "colour://{colour}/{shade}"]
    assert config.contents == [
        t.TextResourceContents(
            uri="config://app", mime_type="application/json", text='{"theme": "dark"}'
        )
    ]
    assert note.contents[0].text == "Hello from trio_mcp."  # type: ignore[union-attr]
    assert colour.contents[0].text == "dark ish red"  # type: ignore[union-attr]


@pytest.mark.spec("RS-15")
async def test_binary_contents_are_base64_and_uris_are_checked() -> None:
    async with open_memory_client(everything()) as client:
        pixel = await client.read_resource("image://pixel")
    (blob,) = pixel.contents
    assert isinstance(blob, t.BlobResourceContents)
    assert blob.mime_type == "image/png"
    assert base64.b64decode(blob.blob) == everything_module.PIXEL
    with pytest.raises(ValueError, match="needs a scheme"):
        Server("x").add_resource("no-scheme", _text)
    with pytest.raises(ValueError, match="unbalanced"):
        Server("x").add_resource_template("a://{unclosed", _text)


@pytest.mark.spec("RS-13")
def test_custom_schemes_follow_rfc_3986() -> None:
    server = Server("x")
    server.add_resource("my-app+v1.2://thing", _text)
    with pytest.raises(ValueError, match="needs a scheme"):
        server.add_resource("1bad://thing", _text)
    with pytest.raises(ValueError, match="needs a scheme"):
        server.add_resource("b@d://thing", _text)


@pytest.mark.spec("RS-04")
async def test_one_read_may_return_several_contents() -> None:
    server = Server("x")

    @server.resource("dir://root", mime_type="inode/directory")
    async def listing() -> list[t.TextResourceContents | bytes]:
        return [t.TextResourceContents(uri="dir://root/a", text="A"), b"\x00\x01"]

    async with open_memory_client(server) as client:
        result = await client.read_resource("dir://root")
    first, second = result.contents
    assert first == t.TextResourceContents(uri="dir://root/a", text="A")
    assert isinstance(second, t.BlobResourceContents)
    assert second.blob == "AAE="


@pytest.mark.spec("RS-08")
@pytest.mark.parametrize(("era", "code"), [("legacy", -32002), ("modern", -32602)])
async def test_unknown_resource_is_32002(era: str, code: int) -> None:
    """-32002 in the handshake era (RS-08), -32602 in 2026-07-28 (A-22)."""
    async with open_memory_client(everything(), era=era) as client:
        for uri in ("nothing://here", "note://missing", "colour://red"):
            with pytest.raises(RPCError) as info:
                await client.read_resource(uri)
            assert info.value.code == code
            assert info.value.message == "Resource not found"
            assert info.value.data == {"uri": uri}
        # ...and the session goes on.
        assert (await client.read_resource("config://app")).contents


def test_template_variables_must_match_parameters() -> None:
    async def fn(a: str) -> str:
        return a

    with pytest.raises(ValueError, match="variables"):
        Server("x").add_resource_template("x://{b}", fn)


@pytest.mark.spec("RS-06")
async def test_updates_go_only_to_subscribed_sessions() -> None:
    server = everything()
    async with open_raw(server) as (subscriber, _), open_raw(server) as (bystander, _):
        assert (await subscriber.request("resources/subscribe", {"uri": "note://a"}))[
            "result"
        ] == {}
        await subscriber.request("resources/subscribe", {"uri": "note://dir"})
        server.resource_updated("note://a")
        server.resource_updated("note://dir/child")  # a sub-resource of a subscription
        server.resource_updated("note://other")
        await settle()
        updates = [f["params"]["uri"] for f in subscriber.unread() if "method" in f]
        assert updates == ["note://a", "note://dir/child"]
        assert bystander.unread() == []
        await subscriber.request("resources/unsubscribe", {"uri": "note://a"})
        server.resource_updated("note://a")
        await settle()
        assert [f for f in subscriber.unread() if "method" in f] == []


async def test_a_tool_can_trigger_an_update_seen_by_our_client() -> None:
    async with open_memory_client(everything()) as client:
        async with client.resource_updates("note://todo") as updates:
            await client.call_tool("set_note", {"name": "todo", "text": "buy milk"})
            with trio.fail_after(5):
                assert await updates.receive() == "note://todo"
        note = await client.read_resource("note://todo")
    assert note.contents[0].text == "buy milk"  # type: ignore[union-attr]


@pytest.mark.spec("RS-05")
async def test_resource_list_changed_on_add_and_remove() -> None:
    server = everything()
    async with open_raw(server) as (peer, _):
        server.add_resource("extra://one", _text)
        await peer.wait_method("notifications/resources/list_changed")
        peer.unread()
        server.remove_resource_template("note://{name}")
        await settle()
        assert [f["method"] for f in peer.unread()] == ["notifications/resources/list_changed"]


async def test_resource_function_failure_is_internal_error_and_session_goes_on() -> None:
    server = Server("x")

    @server.resource("x://boom")
    async def boom() -> str:
        raise RuntimeError("secret")

    async with open_raw(server) as (peer, _):
        reply = await peer.request("resources/read", {"uri": "x://boom"})
        assert reply["error"] == {"code": -32603, "message": "Internal error"}
        assert error_code(await peer.request("resources/read", {"uri": 7})) == -32602
        assert error_code(await peer.request("resources/read", {"uri": "x://nope"})) == -32002


def _delivery_tasks() -> int:
    """How many notice-delivery tasks ("trio_mcp notices") are alive now."""

    def walk(task: trio.lowlevel.Task) -> int:
        own = task.name == "trio_mcp notices"
        return own + sum(walk(c) for n in task.child_nurseries for c in n.child_tasks)

    root = trio.lowlevel.current_root_task()
    assert root is not None
    return walk(root)


@pytest.mark.spec("RS-05")
async def test_the_delivery_task_starts_with_the_first_notice() -> None:
    # An idle session keeps no task for notices (issue #16: a quarter of an
    # idle session's tasks); the first notice starts it, and a notice queued
    # during the handshake still waits for notifications/initialized.
    server = everything()
    async with open_raw(server) as (idle, _), open_raw(server, version=None) as (early, _):
        await settle()
        assert _delivery_tasks() == 0
        server.add_resource("extra://one", _text)
        await idle.wait_method("notifications/resources/list_changed")
        await settle()
        assert _delivery_tasks() == 2  # both sessions have a notice now
        assert [f for f in early.frames if "method" in f] == []  # not initialized yet
        await early.handshake_as_client(LATEST)
        await early.wait_method("notifications/resources/list_changed")
        server.add_resource("extra://two", _text)  # the running task delivers it
        await settle()
        changes = [
            f for f in idle.frames if f.get("method") == "notifications/resources/list_changed"
        ]
        assert len(changes) == 2
        assert _delivery_tasks() == 2
    # Both sessions are closed: a notice now finds no session to start a task in.
    server.add_resource("extra://three", _text)
    await settle()
    assert _delivery_tasks() == 0
