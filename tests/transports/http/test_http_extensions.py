"""An extension over Streamable HTTP in both eras: its declaration in the
initialize and discover results, a custom request answered, the custom
notification the server sends while answering it, and one the client sends;
with the example's server (examples/extension.py), its middleware included."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Literal

import pytest
import trio
from http_helpers import running

from trio_mcp import open_http_client
from trio_mcp.protocol import LocalProtocolError

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "examples"))
import extension as example

NOT_HUNG = 20


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_the_example_extension_over_http(era: Literal["legacy", "modern"]) -> None:
    server = example.build_server()
    whispers: list[Any] = []

    @server.on_notification("com.example/whisper")
    def whisper(params: dict[str, Any], session: object) -> None:
        whispers.append(params["text"])

    shouted: list[str] = []
    async with running(server) as (url, _app):
        with trio.fail_after(NOT_HUNG):
            async with open_http_client(
                url + "/mcp",
                era=era,
                custom_notifications={
                    example.SHOUTED: lambda params, session: shouted.append(params["text"])
                },
            ) as client:
                assert client.era == era
                if era == "legacy":
                    assert client.initialize_result is not None
                    caps = client.initialize_result.capabilities
                else:
                    assert client.discover_result is not None
                    caps = client.discover_result.capabilities
                assert caps.extensions == {example.SHOUT: {"loud": True}}
                result = await client.call(example.SHOUT, {"text": "over http"})
                if era == "legacy":
                    await client.notify("com.example/whisper", {"text": "psst"})
                else:
                    # A 2026-07-28 POST is served on its own: a client's
                    # notification would reach no session, so it is refused here.
                    with pytest.raises(LocalProtocolError, match="send it as a request"):
                        await client.notify("com.example/whisper", {"text": "psst"})
                await client.call(example.SHOUT, {"text": "again"})
    assert result["text"] == "OVER HTTP"
    assert result["_meta"][example.SEEN_BY] == "examples/extension.py"
    assert shouted == ["OVER HTTP", "AGAIN"]
    assert whispers == (["psst"] if era == "legacy" else [])
