"""The bounded head scan of an oversize frame (issue 17 §1): it finds the top-level
id and kind from the first bytes only, agrees with a full parse whenever it answers,
and answers None whenever it cannot be sure."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trio_mcp.protocol import (
    Direction,
    ErrorReceived,
    InvalidMessage,
    RequestReceived,
    RequestState,
)
from trio_mcp.protocol._codec import FrameError, decode
from trio_mcp.protocol._head import (
    HEAD_SCAN_SIZE,
    TAIL_SCAN_SIZE,
    HeadScan,
    OversizeFrame,
    scan_frame,
    scan_head,
)
from trio_mcp.protocol._messages import is_valid_request_id
from trio_mcp.testing import ProtocolPair

# ---------------------------------------------------------------- the table

ROWS: list[Any] = [
    # (frame, limit, expected)
    pytest.param(
        b'{"jsonrpc":"2.0","id":1,"method":"ping"}', 4096, HeadScan(1, True), id="request"
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","id":"a","result":{}}', 4096, HeadScan("a", False), id="response"
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","method":"tools/call","params":{"id":7,"x":"' + b"a" * 100,
        40,
        None,
        id="nested-id-only",
    ),
    pytest.param(
        b'{"method":"tools/call","params":{"id":7},"id":8,"jsonrpc":"2.0"}',
        4096,
        HeadScan(8, True),
        id="nested-id-before-top-level-id",
    ),
    pytest.param(
        b'{"method":"x","params":{"id":7,"args":{"q":"' + b"a" * 200 + b'"}},"id":8}',
        60,
        None,
        id="top-level-id-beyond-the-bound",
    ),
    pytest.param(
        b'{"method":"x","params":{"s":"he said \\"id\\": 5 } {"},"id":9}',
        4096,
        HeadScan(9, True),
        id="escaped-quotes-and-braces-in-a-string",
    ),
    pytest.param(
        b'{"method":"id","params":["id",{"id":1}],"id":"id"}',
        4096,
        HeadScan("id", True),
        id="id-as-a-string-value-not-a-key",
    ),
    pytest.param(
        '{"method":"ž","id":"日本\\u00e9\\"","params":{"x":"🙂"}}'.encode(),
        4096,
        HeadScan('日本é"', True),
        id="unicode-and-escapes-in-the-id",
    ),
    pytest.param(b'{"\\u0069d":3,"method":"m"}', 4096, HeadScan(3, True), id="escaped-key"),
    pytest.param(b'{"id":1,"id":2,"method":"m"}', 4096, None, id="duplicate-id"),
    pytest.param(b'{"id":"\\ud800","method":"m"}', 4096, None, id="lone-surrogate-id"),
    pytest.param(b'{"id":true,"method":"m"}', 4096, None, id="bool-id"),
    pytest.param(b'{"id":1.0,"method":"m"}', 4096, None, id="float-id"),
    pytest.param(b'{"id":1e3,"method":"m"}', 4096, None, id="exponent-id"),
    pytest.param(b'{"id":null,"method":"m"}', 4096, None, id="null-id"),
    pytest.param(b'{"id":[1],"method":"m"}', 4096, None, id="array-id"),
    pytest.param(b'{"id":01,"method":"m"}', 4096, None, id="leading-zero"),
    pytest.param(b'{"id":-5,"method":"m"}', 4096, HeadScan(-5, True), id="negative-id"),
    pytest.param(b'{"id":18446744073709551616,"method":"m"}', 4096, None, id="id-over-64-bits"),
    pytest.param(b'{"id":12345,"method":"m"}', 10, None, id="id-cut-by-the-bound"),
    pytest.param(b'{"id":"abcdef","method":"m"}', 10, None, id="string-id-cut-by-the-bound"),
    pytest.param(b'{"id":5,"params":{"a":"' + b"x" * 100, 30, None, id="kind-unknown"),
    pytest.param(
        b'{"id":5,"result":{"a":"' + b"x" * 100, 30, HeadScan(5, False), id="cut-response"
    ),
    pytest.param(
        b'{"id":5,"method":"m","params":"' + b"x" * 100, 30, HeadScan(5, True), id="cut-request"
    ),
    pytest.param(b'{"id":5,"method":"m"', 4096, None, id="complete-but-unclosed"),
    pytest.param(b'{"id":5,"method":"m"}x', 4096, None, id="trailing-garbage"),
    pytest.param(b'{"id":5 "method":"m"}', 4096, None, id="missing-comma"),
    pytest.param(b'[{"id":5,"method":"m"}]', 4096, None, id="batch"),
    pytest.param(b'"id"', 4096, None, id="not-an-object"),
    pytest.param(b"", 4096, None, id="empty"),
    pytest.param(b"\xff\xfe", 4096, None, id="not-utf8"),
    pytest.param(b'  {"id" : 5 , "method" : "m" }  ', 4096, HeadScan(5, True), id="whitespace"),
]


@pytest.mark.spec("BP-28")
@pytest.mark.parametrize(("frame", "limit", "expected"), ROWS)
def test_scan_head_table(frame: bytes, limit: int, expected: HeadScan | None) -> None:
    assert scan_head(frame, limit) == expected
    assert scan_head(frame.decode("utf-8", "replace"), limit) == expected


def test_the_head_is_four_kib() -> None:
    assert HEAD_SCAN_SIZE == 4096


def test_the_scan_reads_only_the_head() -> None:
    # Whatever comes after the head (here, not even JSON) is never looked at.
    frame = b'{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"a":"' + b"x" * 10_000
    assert scan_head(frame + b"\xff garbage") == HeadScan(42, True)


def test_an_oversize_frame_marker_is_never_taken_for_a_whole_frame() -> None:
    whole = b'{"id":5,"method":"m"}'
    assert scan_head(whole) == HeadScan(5, True)
    # The same bytes as the head of a longer frame: the object's end was seen, but
    # that is its head's end only if the frame is no longer (it is: 30 bytes).
    assert scan_head(OversizeFrame(whole, 30, 20), size=30) is None
    [error] = decode(OversizeFrame(b'{"id":5,"method":"m","params":{"x":"', 5000, 100))
    assert isinstance(error, FrameError)
    assert error.reply is not None
    assert error.reply.id == 5
    assert "5000 bytes exceeds the limit of 100 bytes" in error.detail


# ---------------------------------------------------------------- properties

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(1 << 63), max_value=(1 << 64) - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)
keys = st.sampled_from(
    ["id", "method", "result", "error", "params", "jsonrpc", "x", "ид"]
) | st.text(max_size=6)
ids = (
    st.integers(min_value=-(1 << 63), max_value=(1 << 64) - 1) | st.text(max_size=10) | json_scalars
)


@st.composite
def frames(draw: st.DrawFn) -> bytes:
    """A JSON object as a list of members (keys may repeat, order is free)."""
    members = draw(st.lists(st.tuples(keys, json_values), max_size=6))
    if draw(st.booleans()):
        members.insert(draw(st.integers(0, len(members))), ("id", draw(ids)))
    body = ",".join(
        json.dumps(k, ensure_ascii=draw(st.booleans())) + ":" + orjson.dumps(v).decode()
        for k, v in members
    )
    return ("{" + body + "}").encode()


def top_level_keys(frame: bytes) -> list[str]:
    """The outermost object's keys, repeats kept (a full parse, by the stdlib)."""
    pairs: list[list[tuple[str, Any]]] = []

    def keep(items: list[tuple[str, Any]]) -> dict[str, Any]:
        pairs[:] = [items]  # the outermost object is built last
        return dict(items)

    json.loads(frame, object_pairs_hook=keep)
    return [key for key, _ in pairs[0]]


def full_parse(frame: bytes) -> tuple[Any, bool] | None:
    """The (id, has method) a full parse reads, None if it reads no single valid id."""
    obj = orjson.loads(frame)
    if top_level_keys(frame).count("id") != 1 or not is_valid_request_id(obj["id"]):
        return None
    return obj["id"], "method" in obj


def frame_has_duplicate_id(frame: bytes) -> bool:
    return top_level_keys(frame).count("id") > 1


@pytest.mark.spec("BP-28")
@settings(max_examples=400)
@given(frames())
def test_a_whole_frame_in_the_head_agrees_with_a_full_parse(frame: bytes) -> None:
    scan = scan_head(frame, limit=len(frame) + 10)
    expected = full_parse(frame)
    assert (None if scan is None else (scan.id, scan.is_request)) == expected


@pytest.mark.spec("BP-28")
@settings(max_examples=400)
@given(frames(), st.integers(min_value=1, max_value=200))
def test_a_cut_head_never_claims_an_id_a_full_parse_would_not_find(
    frame: bytes, limit: int
) -> None:
    scan = scan_head(frame, limit=limit)
    if scan is None or frame_has_duplicate_id(frame):
        return  # a repeated top-level "id" is refused by the codec (J-12) anyway
    obj = orjson.loads(frame)
    assert "id" in obj
    assert obj["id"] == scan.id
    assert type(obj["id"]) is type(scan.id)
    if scan.is_request:
        assert "method" in obj
    elif len(frame) <= limit:  # read whole: exact
        assert "method" not in obj
    else:  # cut: a response needs its "result" or "error" seen
        assert "result" in obj or "error" in obj


@settings(max_examples=300)
@given(frames(), st.integers(min_value=1, max_value=200))
def test_an_id_wholly_in_the_head_is_found(frame: bytes, limit: int) -> None:
    # A well-formed request or response whose id and kind come first is always read.
    expected = full_parse(frame)
    if expected is None:
        return
    request_id, has_method = expected
    kind = ("method", "m") if has_method else ("result", {})
    head = orjson.dumps({"jsonrpc": "2.0", "id": request_id, kind[0]: kind[1]})[:-1]
    big = head + b',"params":' + frame
    if len(head) + 12 <= limit:
        assert scan_head(big + b"}", limit=limit) == HeadScan(request_id, has_method)


@settings(max_examples=200)
@given(st.binary(max_size=64), st.integers(min_value=0, max_value=80))
def test_never_raises(data: bytes, limit: int) -> None:
    scan_head(data, limit)


# ---------------------------------------------------------------- both roles


#: A frame bound the handshake's frames fit in (under 300 bytes) and the
#: padded frames below do not.
BOUND = 1000


def _operating(bound: int | None = None) -> ProtocolPair:
    """A handshaken pair; with *bound*, both sides refuse frames over it."""
    options = {} if bound is None else {"max_message_size": bound}
    pair = ProtocolPair(client_options=options, server_options=options)
    pair.handshake()
    return pair


def _big(**fields: Any) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", **fields})


@pytest.mark.spec("BP-28")
@pytest.mark.parametrize("role", ["client", "server"])
def test_an_oversize_response_fails_only_its_call(role: str) -> None:
    pair = _operating(bound=BOUND)
    side = pair.client if role == "client" else pair.server
    request = side.send_request("ping")
    side.encode(request)
    [event] = side.receive_data(_big(id=request.id, result={"pad": "x" * 2 * BOUND}))
    assert isinstance(event, ErrorReceived)
    assert (event.request_id, event.remote, event.too_large) == (request.id, False, True)
    assert "Oversize response for ping" in event.error.message
    record = side.record(Direction.OUTBOUND, request.id)
    assert record is not None
    assert record.state is RequestState.FAILED
    # For no call of ours: dropped, counted, nothing owed, and the session goes on.
    [event] = side.receive_data(_big(id=4242, result={"pad": "x" * 2 * BOUND}))
    assert isinstance(event, InvalidMessage)
    assert (event.reply, event.fatal) == (None, False)


@pytest.mark.spec("BP-28")
def test_a_client_answers_an_oversize_server_request_with_its_id() -> None:
    pair = _operating(bound=BOUND)
    [event] = pair.client.receive_data(
        _big(id="s1", method="sampling/createMessage", params={"pad": "x" * 2 * BOUND})
    )
    assert isinstance(event, InvalidMessage)
    assert not event.fatal
    assert event.reply is not None
    assert (event.reply.id, event.reply.error.code) == ("s1", -32600)


@pytest.mark.spec("BP-28")
@pytest.mark.spec("BP-04")
def test_an_oversize_request_reusing_an_id_in_flight_is_answered_with_a_null_id() -> None:
    """The id read from the head is an id in flight: answering with it would read
    as the response to the original request, so the refusal's id is null, as for
    any duplicate, and the original is untouched."""
    pair = _operating(bound=BOUND)
    [first] = pair.server.receive_data(_big(id=7, method="ping"))
    assert isinstance(first, RequestReceived)
    [event] = pair.server.receive_data(_big(id=7, method="ping", params={"pad": "x" * 2 * BOUND}))
    assert isinstance(event, InvalidMessage)
    assert event.reply is not None
    assert (event.reply.id, event.reply.error.code) == (None, -32600)
    record = pair.server.record(Direction.INBOUND, 7)
    assert record is not None
    assert record.state is RequestState.QUEUED
    assert pair.server.start_inbound(7)
    assert pair.server.respond(7, {}) is not None


@pytest.mark.spec("BP-28")
def test_a_client_ends_its_session_on_an_oversize_frame_with_no_readable_id() -> None:
    pair = _operating(bound=BOUND)
    # The id comes after the head (4 KiB, whatever the bound) and before the tail.
    frame = _big(result={"pad": "x" * HEAD_SCAN_SIZE}, id=1, more="y" * TAIL_SCAN_SIZE)
    [event] = pair.client.receive_data(frame)
    assert isinstance(event, InvalidMessage)
    assert event.fatal  # the call it answers cannot be told


# ---------------------------------------------------------------- head and tail

PAD = b"x" * 10_000
TAIL_ROWS: list[Any] = [
    pytest.param(
        b'{"jsonrpc":"2.0","method":"tools/call","params":{"a":"' + PAD + b'"},"id":7}',
        HeadScan(7, True),
        id="request-id-last",
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","result":{"a":"' + PAD + b'"},"id":"r-1"}',
        HeadScan("r-1", False),
        id="response-id-last",
    ),
    pytest.param(
        b'{"method":"m","params":{"a":"' + PAD + b'"} , "id" : -3 }  \r',
        HeadScan(-3, True),
        id="whitespace-around-the-last-member",
    ),
    pytest.param(
        b'{"method":"m","params":{"a":"' + PAD + b'"},"id":"a\\\\"}',
        HeadScan("a\\", True),
        id="escaped-backslash-before-the-closing-quote",
    ),
    pytest.param(
        b'{"method":"m","params":{"a":"' + PAD + b'"},"id":"a\\",\\"id\\":5"}',
        HeadScan('a","id":5', True),
        id="escaped-quotes-in-a-string-id",
    ),
    pytest.param(
        b'{"method":"m","params":{"a":"' + PAD + b'","id":5}}',
        None,
        id="nested-id-last",
    ),
    pytest.param(
        b'{"method":"m","params":{"a":"' + PAD + b'"},"x":"\\",\\"id\\":5"}',
        None,
        id="an-id-inside-a-string-value",
    ),
    pytest.param(
        b'{"method":"m","params":{"a":"' + PAD + b'"},"\\u0069d":5}',
        HeadScan(5, True),
        id="escaped-key",
    ),
    pytest.param(
        b'{"method":"m","params":{"a":"' + PAD + b'"},"id":5,"z":1}',
        None,
        id="id-before-the-last-member",
    ),
    pytest.param(
        b'{"id":4,"method":"m","params":{"a":"' + PAD + b'"},"id":5}',
        None,
        id="duplicate-id-head-and-tail",
    ),
    pytest.param(
        b'{"params":{"a":"' + PAD + b'"},"id":5}',
        None,
        id="kind-unknown-from-the-head",
    ),
    pytest.param(
        b'{"method":"m","params":{"a":"' + PAD + b'"},"id":true}', None, id="bool-id-last"
    ),
    pytest.param(
        b'{"method":"m","params":{"a":"' + PAD + b'"},"id":1.5}', None, id="float-id-last"
    ),
    pytest.param(
        b'{"method":"m","params":{"a":"' + PAD + b'"},"id":[5]}', None, id="array-id-last"
    ),
    pytest.param(b'{"method":"m","params":{"a":"' + PAD + b'"},"id":5', None, id="unclosed"),
    pytest.param(
        b'{"method":"m","params":{"a":"' + PAD + b'"},"id":5}x', None, id="trailing-garbage"
    ),
    pytest.param(b'{"method":"m","params":["' + PAD + b'"]"id":5}', None, id="no-comma"),
]


@pytest.mark.spec("BP-28")
@pytest.mark.parametrize(("frame", "expected"), TAIL_ROWS)
def test_scan_frame_table(frame: bytes, expected: HeadScan | None) -> None:
    assert scan_frame(frame[:HEAD_SCAN_SIZE], frame[-TAIL_SCAN_SIZE:], len(frame)) == expected
    # As the codec does for a frame it holds whole.
    [error] = decode(frame, max_size=100)
    assert isinstance(error, FrameError)
    assert error.too_large
    found = None if expected is None else expected.id
    if expected is None or expected.is_request:
        assert error.reply is not None
        assert error.reply.id == found
    else:
        assert (error.reply, error.response_id) == (None, found)


def test_a_frame_shorter_than_head_and_tail_is_one_id() -> None:
    # Head and tail overlap: the "id" both see is the same member, not a duplicate.
    frame = b'{"method":"m","params":{"a":"' + b"x" * 100 + b'"},"id":5}'
    assert scan_frame(frame[:50], frame, len(frame)) == HeadScan(5, True)
    assert scan_frame(frame, frame, len(frame)) == HeadScan(5, True)
    cut_in_the_id = frame[: frame.index(b'"id"') + 6]
    assert scan_frame(cut_in_the_id, frame[-20:], len(frame)) == HeadScan(5, True)


@pytest.mark.spec("BP-28")
@settings(max_examples=400)
@given(frames(), st.integers(1, 200), st.integers(0, 200))
def test_head_and_tail_never_claim_an_id_a_full_parse_would_not_find(
    frame: bytes, head: int, tail: int
) -> None:
    scan = scan_frame(frame[:head], frame[len(frame) - tail :], len(frame))
    if scan is None or frame_has_duplicate_id(frame):
        return
    obj = orjson.loads(frame)
    assert obj["id"] == scan.id
    assert type(obj["id"]) is type(scan.id)
    if scan.is_request:
        assert "method" in obj
    elif len(frame) <= head:  # read whole: exact
        assert "method" not in obj
    else:  # cut: a response needs its "result" or "error" seen in the head
        assert "result" in obj or "error" in obj


@settings(max_examples=300)
@given(frames(), st.sampled_from([True, False]))
def test_an_id_written_last_is_found_in_the_tail(frame: bytes, has_method: bool) -> None:
    expected = full_parse(frame)
    if expected is None:
        return
    request_id = expected[0]
    kind = b'"method":"m"' if has_method else b'"result":{}'
    last = orjson.dumps({"id": request_id})[1:-1]
    big = b'{"jsonrpc":"2.0",' + kind + b',"params":' + frame + b',"pad":"' + PAD + b'",' + last
    big += b"}"
    assert scan_frame(big[:HEAD_SCAN_SIZE], big[-TAIL_SCAN_SIZE:], len(big)) == HeadScan(
        request_id, has_method
    )


@settings(max_examples=200)
@given(st.binary(max_size=64), st.binary(max_size=64), st.integers(0, 200))
def test_scan_frame_never_raises(head: bytes, tail: bytes, size: int) -> None:
    scan_frame(head, tail, size)
