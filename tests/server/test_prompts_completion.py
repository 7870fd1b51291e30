"""Prompts and completion/complete."""

from __future__ import annotations

import pytest
from server_helpers import error_code, everything, open_raw

from trio_mcp import RPCError, Server
from trio_mcp import types as t
from trio_mcp.testing import open_memory_client


@pytest.mark.spec("PR-01")
@pytest.mark.spec("PR-03")
async def test_prompts_capability_and_list_changed() -> None:
    server = everything()
    assert server.capabilities()["prompts"] == {"listChanged": True}
    assert "prompts" not in Server("x").capabilities()
    async with open_raw(server) as (peer, _):
        prompts = (await peer.request("prompts/list"))["result"]["prompts"]
        assert prompts[0] == {
            "name": "greet",
            "title": "Greeting",
            "description": "Greet someone.",
            "arguments": [
                {"name": "name", "description": "who to greet.", "required": True},
                {"name": "language", "description": "which language.", "required": False},
            ],
        }
        server.remove_prompt("review")
        note = await peer.wait_method("notifications/prompts/list_changed")
        assert note["method"] == "notifications/prompts/list_changed"


@pytest.mark.spec("PR-05")
async def test_prompts_render_any_content() -> None:
    server = everything()

    @server.prompt()
    async def picture() -> list[t.ImageContent | str]:
        return [t.ImageContent.from_bytes(b"\x89PNG", "image/png"), "What is this?"]

    async with open_memory_client(server) as client:
        greet = await client.get_prompt("greet", {"name": "Ann", "language": "french"})
        review = await client.get_prompt("review", {"code": "x = 1"})
        pic = await client.get_prompt("picture")
    assert greet.messages == [
        t.PromptMessage(role="user", content=t.TextContent(text="Greet Ann in french."))
    ]
    assert greet.description == "Greet someone."
    assert [m.role for m in review.messages] == ["user", "assistant"]
    image = pic.messages[0].content
    assert isinstance(image, t.ImageContent)
    assert image.decoded() == b"\x89PNG"


@pytest.mark.spec("PR-06")
@pytest.mark.spec("PR-07")
async def test_prompt_errors_are_32602() -> None:
    async with open_memory_client(everything()) as client:
        for name, args, text in [
            ("greet", {}, "Missing required argument(s) for prompt greet: name"),
            ("greet", {"name": "A", "mood": "x"}, "Unknown argument(s) for prompt greet: mood"),
            ("nope", {}, "Unknown prompt: nope"),
        ]:
            with pytest.raises(RPCError) as info:
                await client.get_prompt(name, args)
            assert info.value.code == -32602
            assert info.value.message == text
    async with open_raw(everything()) as (peer, _):
        bad = await peer.request("prompts/get", {"name": "greet", "arguments": {"name": 5}})
        assert error_code(bad) == -32602
        ok = await peer.request("prompts/get", {"name": "greet", "arguments": {"name": "B"}})
        assert "result" in ok


def test_prompt_arguments_must_be_strings() -> None:
    async def bad(n: int) -> str:
        return ""

    with pytest.raises(TypeError, match="must be a str"):
        Server("x").add_prompt(bad)


@pytest.mark.spec("CP-01")
@pytest.mark.spec("CP-04")
async def test_completions_capability_and_errors() -> None:
    assert everything().capabilities()["completions"] == {}
    plain = Server("x")
    plain.add_prompt(_prompt)
    assert "completions" not in plain.capabilities()
    ref = {"type": "ref/prompt", "name": "_prompt"}
    params = {"ref": ref, "argument": {"name": "a", "value": ""}}
    async with open_raw(plain) as (peer, _):
        assert error_code(await peer.request("completion/complete", params)) == -32601
    # 2024-11-05 had no capability: the server itself answers "not supported".
    async with open_raw(plain, version="2024-11-05") as (peer, _):
        assert error_code(await peer.request("completion/complete", params)) == -32601
    async with open_memory_client(everything()) as client:
        references: list[tuple[t.PromptReference | t.ResourceTemplateReference, str]] = [
            (t.PromptReference(name="nope"), "x"),
            (t.PromptReference(name="greet"), "nope"),
            (t.ResourceTemplateReference(uri="none://{x}"), "x"),
        ]
        for reference, argument in references:
            with pytest.raises(RPCError) as info:
                await client.complete(reference, argument, "")
            assert info.value.code == -32602
        # A known argument without a completer: an empty completion.
        empty = await client.complete(t.PromptReference(name="greet"), "name", "A")
        assert empty.completion.values == []


async def _prompt(a: str) -> str:
    return a


@pytest.mark.spec("CP-02")
@pytest.mark.spec("CP-03")
async def test_completion_values_context_and_cap() -> None:
    server = everything()
    seen: list[dict[str, str]] = []

    @server.completion(prompt="review", argument="code")
    def many(value: str, arguments: dict[str, str]) -> list[str]:
        seen.append(arguments)
        return [f"{value}{i}" for i in range(250)]

    async with open_memory_client(server) as client:
        languages = await client.complete(t.PromptReference(name="greet"), "language", "s")
        colours = await client.complete(
            t.ResourceTemplateReference(uri="colour://{colour}/{shade}"), "colour", "b"
        )
        capped = await client.complete(
            t.PromptReference(name="review"), "code", "x", context_arguments={"lang": "py"}
        )
    assert languages.completion.values == ["spanish", "swedish"]
    assert colours.completion.values == ["blue", "black"]
    assert len(capped.completion.values) == 100
    assert capped.completion.total == 250
    assert capped.completion.has_more is True
    assert seen == [{"lang": "py"}]
