"""The HTTP client against answers that are not what they seem (issue 17 §2).

Found by the client-side HTTP fuzzing (``bench/fuzz.py --side client``):

* an answer whose id is a list or an object raised ``TypeError: unhashable
  type`` out of the transport, taking the whole client down; an id of ``true``
  or ``1.0`` (equal to ``1`` in Python) marked call ``1`` answered although the
  session refuses such an answer, so the call waited for ever;
* an answer with the call's id but without ``"jsonrpc": "2.0"``: the transport
  took it for the answer, the session refused it without failing the call,
  so the call waited for ever although its response had ended;
* a JSON answer nested deeper than 255 levels (orjson reads 1024 but writes
  255) raised ``TypeError`` out of the transport when it wrote the answer back
  (2026-07-28 always did; the handshake era for a batch member).

Now an invalid id matches no call (the call fails when its stream ends,
HM-14) and a response with the wrong ``jsonrpc`` fails the call it names, at
once (J-07); a deep answer is passed on as it came, and a batch member too
deep to write back is dropped (its call fails when the stream ends); the
client goes on.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
import trio
from modern_http_script import Post, discover_result, scripted

from trio_mcp import InvalidPeerResult, open_http_client
from trio_mcp._client._connect import forget_eras
from trio_mcp._errors import RPCError
from trio_mcp.transports._http._common import batch_frames, id_key

NOT_HUNG = 10.0


@pytest.fixture(autouse=True)
def _fresh_eras() -> None:
    forget_eras()


def bad_answers(bad: dict[str, Any], *, sse: bool, batch: bool = False) -> Any:
    """Every POST answered properly, but the second (the first ping) as *bad* says
    (its keys replace the proper answer's; ``None`` values drop a key), in a
    batch of one with *batch* (JSON only).

    In 2026-07-28 ``ping`` is a ``server/discover`` too, so every POST here is one.
    """
    posts = 0

    async def handler(post: Post) -> None:
        nonlocal posts
        posts += 1
        message: Any = {"jsonrpc": "2.0", "id": post.body["id"], "result": discover_result()}
        if posts == 2:
            message = {k: v for k, v in {**message, **bad}.items() if v is not None}
            if batch:
                message = [message]
        if sse:
            await post.event(message)
            await post.end()
        else:
            await post.json(message)

    return handler


@pytest.mark.spec("HM-14")
@pytest.mark.parametrize("sse", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("bad_id", [[1], {"a": 1}, True, 1.0], ids=repr)
async def test_an_answer_with_an_invalid_id_fails_the_call_and_the_client_goes_on(
    bad_id: Any, sse: bool
) -> None:
    async with scripted(bad_answers({"id": bad_id}, sse=sse)) as (url, app):
        with trio.fail_after(NOT_HUNG):
            async with open_http_client(url, era="modern", discover=False) as client:
                with pytest.raises(RPCError, match="ended before the answer"):
                    await client.ping()
                await client.ping()  # answered properly: the client is still there
    assert len(app.posts("server/discover")) == 3


@pytest.mark.spec("J-07")
@pytest.mark.parametrize("sse", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("version", [None, "1.0"], ids=["missing", "1.0"])
async def test_an_answer_without_jsonrpc_2_0_fails_its_call_at_once(
    version: str | None, sse: bool
) -> None:
    async with scripted(bad_answers({"jsonrpc": version}, sse=sse)) as (url, _):
        with trio.fail_after(NOT_HUNG):
            async with open_http_client(url, era="modern", discover=False) as client:
                with pytest.raises(InvalidPeerResult, match="jsonrpc"):
                    await client.ping()
                await client.ping()


@pytest.mark.parametrize("bad_id", [[1], {"a": 1}, True, 1.0, None, 1.5])
def test_no_invalid_id_has_the_key_of_a_valid_one(bad_id: Any) -> None:
    keys = {id_key(1), id_key("1"), id_key(0), id_key("")}
    assert id_key(bad_id) not in keys
    assert id_key(1) == id_key(1)
    assert id_key(1) != id_key("1")


#: 300 levels of nesting: orjson reads up to 1024 but writes only 255.
DEEP = b"[" * 300 + b"]" * 300


def deep_answers(*, batch: bool) -> Any:
    """Every POST answered properly, the second with a result nested 300 levels deep."""
    posts = 0

    async def handler(post: Post) -> None:
        nonlocal posts
        posts += 1
        result = {**discover_result(), "deep": "DEEP"}
        body = orjson.dumps({"jsonrpc": "2.0", "id": post.body["id"], "result": result})
        if posts == 2:
            body = body.replace(b'"DEEP"', DEEP)  # written by hand: orjson cannot
            body = b"[" + body + b"]" if batch else body
        await post.raw(body)

    return handler


async def test_an_answer_nested_deeper_than_orjson_writes_is_passed_on() -> None:
    async with scripted(deep_answers(batch=False)) as (url, _):
        with trio.fail_after(NOT_HUNG):
            async with open_http_client(url, era="modern", discover=False) as client:
                await client.ping()
                await client.ping()


@pytest.mark.spec("HM-14")
async def test_a_batch_member_too_deep_to_write_back_is_dropped_and_its_call_fails() -> None:
    async with scripted(deep_answers(batch=True)) as (url, _):
        with trio.fail_after(NOT_HUNG):
            async with open_http_client(url, era="modern", discover=False) as client:
                with pytest.raises(RPCError, match="ended before the answer"):
                    await client.ping()
                await client.ping()


def test_batch_frames_passes_a_body_on_and_writes_back_the_members_it_can() -> None:
    body = b'{"deep": ' + DEEP + b"}"
    assert batch_frames(body, orjson.loads(body)) == [body]
    batch = orjson.loads(b'[{"a": 1}, ' + DEEP + b", 2]")
    assert batch_frames(b"", batch) == [b'{"a":1}', b"2"]
