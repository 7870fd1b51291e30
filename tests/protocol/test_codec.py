"""Phase one of the codec: frames to envelopes and back, as tables.

Each row of a decode table is ``(frame, expected)``: the frame is what a peer
wrote; ``expected`` is the envelope, or the error code and the id the reply must
carry (``None`` for ``"id": null``), or ``NO_REPLY`` when nothing may be sent back
(a broken response or notification is never answered).
"""

from __future__ import annotations

import collections
import json
import math
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trio_mcp.protocol import (
    DEFAULT_MAX_MESSAGE_SIZE,
    ErrorCode,
    ErrorObject,
    ErrorResponse,
    FrameError,
    LocalProtocolError,
    Message,
    Notification,
    Request,
    Response,
    decode,
    encode,
    is_valid_request_id,
)

NO_REPLY = "no reply"


def dumps(obj: Any) -> bytes:
    return orjson.dumps(obj)


def one(data: bytes | str, **kw: Any) -> Message | FrameError:
    items = decode(data, **kw)
    assert len(items) == 1, items
    return items[0]


def refused(data: bytes | str, **kw: Any) -> FrameError:
    item = one(data, **kw)
    assert isinstance(item, FrameError), item
    return item


def assert_reply(error: FrameError, code: ErrorCode, reply_id: object) -> None:
    assert error.reply is not None, error
    assert error.reply.error.code == code
    assert error.reply.id == reply_id
    assert error.detail  # a reason a human can read
    assert error.reply.error.message == error.detail


# --- valid envelopes ------------------------------------------------------------

VALID_ROWS: list[tuple[Any, Message]] = [
    ({"jsonrpc": "2.0", "id": 1, "method": "ping"}, Request(1, "ping")),
    ({"jsonrpc": "2.0", "id": "a-1", "method": "ping"}, Request("a-1", "ping")),
    ({"jsonrpc": "2.0", "id": 0, "method": "ping"}, Request(0, "ping")),
    ({"jsonrpc": "2.0", "id": -7, "method": "ping"}, Request(-7, "ping")),
    ({"jsonrpc": "2.0", "id": "", "method": "ping"}, Request("", "ping")),
    ({"jsonrpc": "2.0", "id": 2**64 - 1, "method": "ping"}, Request(2**64 - 1, "ping")),
    (
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x"}},
        Request(1, "tools/call", {"name": "x"}),
    ),
    ({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": None}, Request(1, "ping")),
    (
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        Notification("notifications/initialized"),
    ),
    (
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}},
        Notification("notifications/cancelled", {"requestId": 3}),
    ),
    ({"jsonrpc": "2.0", "id": 1, "result": {}}, Response(1, {})),
    ({"jsonrpc": "2.0", "id": "s", "result": {"a": [1, 2]}}, Response("s", {"a": [1, 2]})),
    (
        {"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "nope"}},
        ErrorResponse(1, ErrorObject(-32601, "nope")),
    ),
    (
        {"jsonrpc": "2.0", "id": 1, "error": {"code": 5, "message": "m", "data": [1]}},
        ErrorResponse(1, ErrorObject(5, "m", [1])),
    ),
    # an error response whose id could not be read carries id null, or none.
    (
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "bad"}},
        ErrorResponse(None, ErrorObject(-32700, "bad")),
    ),
    (
        {"jsonrpc": "2.0", "error": {"code": -32700, "message": "bad"}},
        ErrorResponse(None, ErrorObject(-32700, "bad")),
    ),
]


@pytest.mark.spec("BP-01", "BP-02", "BP-06", "BP-07", "BP-10")
@pytest.mark.parametrize(("obj", "expected"), VALID_ROWS)
def test_decode_valid(obj: Any, expected: Message) -> None:
    assert decode(dumps(obj)) == [expected]


@pytest.mark.spec("BP-01", "BP-02", "BP-06", "BP-07")
@pytest.mark.parametrize(("obj", "expected"), VALID_ROWS)
def test_encode_round_trip(obj: Any, expected: Message) -> None:
    data = encode(expected)
    assert decode(data) == [expected]
    wire = orjson.loads(data)
    assert wire["jsonrpc"] == "2.0"
    if isinstance(expected, Notification):
        assert "id" not in wire  # BP-10
    if isinstance(expected, ErrorResponse):
        assert "result" not in wire  # BP-08
        assert wire["id"] == expected.id  # null stays null
    if isinstance(expected, Response):
        assert "error" not in wire


def test_decode_accepts_str_bytearray_and_memoryview() -> None:
    raw = dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    for data in (raw, raw.decode(), bytearray(raw), memoryview(raw)):
        assert decode(data) == [Request(1, "ping")]


def test_encode_leaves_out_absent_params_and_error_data() -> None:
    assert orjson.loads(encode(Request(1, "ping"))) == {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    assert orjson.loads(encode(Notification("n"))) == {"jsonrpc": "2.0", "method": "n"}
    assert orjson.loads(encode(ErrorResponse(2, ErrorObject(-1, "m")))) == {
        "jsonrpc": "2.0",
        "id": 2,
        "error": {"code": -1, "message": "m"},
    }


# --- the malformed-frame table: refusals that owe a reply -------------------------

REPLY_ROWS: list[tuple[str, bytes, ErrorCode, object]] = [
    # Duplicate routing keys: JSON parsers disagree on which one wins, so a proxy
    # could route the frame differently from us (reliability J-12). Null id: the
    # id itself is in doubt.
    (
        "duplicate-id",
        b'{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}',
        ErrorCode.INVALID_REQUEST,
        None,
    ),
    (
        "duplicate-method",
        b'{"jsonrpc":"2.0","id":1,"method":"a","method":"b"}',
        ErrorCode.INVALID_REQUEST,
        None,
    ),
    # Neither a request nor a response (a misspelt "Method"): an invalid request,
    # answered with its id (reliability J-11); the connection fails our own call
    # instead when the id is one of ours in flight (tests/session/test_bad_responses.py).
    ("neither-method-nor-result", dumps({"jsonrpc": "2.0", "id": 1}), ErrorCode.INVALID_REQUEST, 1),
    (
        "misspelt-method",
        dumps({"jsonrpc": "2.0", "id": "a", "Method": "ping"}),
        ErrorCode.INVALID_REQUEST,
        "a",
    ),
    # Not JSON at all: -32700 with id null.
    ("truncated", b'{"jsonrpc": "2.0", "id": 1', ErrorCode.PARSE_ERROR, None),
    ("empty", b"", ErrorCode.PARSE_ERROR, None),
    ("garbage", b"hello", ErrorCode.PARSE_ERROR, None),
    (
        "trailing-garbage",
        b'{"jsonrpc":"2.0","id":1,"method":"ping"} x',
        ErrorCode.PARSE_ERROR,
        None,
    ),
    ("invalid-utf8", b'{"jsonrpc":"2.0","id":1,"method":"\xff"}', ErrorCode.PARSE_ERROR, None),
    (
        "lone-surrogate",
        b'{"jsonrpc":"2.0","id":"\\ud800","method":"p"}',
        ErrorCode.PARSE_ERROR,
        None,
    ),
    ("single-quotes", b"{'jsonrpc': '2.0'}", ErrorCode.PARSE_ERROR, None),
    (
        "nan",
        b'{"jsonrpc":"2.0","id":1,"method":"p","params":{"x":NaN}}',
        ErrorCode.PARSE_ERROR,
        None,
    ),
    (
        "infinity",
        b'{"jsonrpc":"2.0","id":1,"method":"p","params":{"x":Infinity}}',
        ErrorCode.PARSE_ERROR,
        None,
    ),
    (
        "overflow-float",
        b'{"jsonrpc":"2.0","id":1,"method":"p","params":{"x":1e400}}',
        ErrorCode.PARSE_ERROR,
        None,
    ),
    # JSON, but not an object: -32600 with id null.
    ("number", b"42", ErrorCode.INVALID_REQUEST, None),
    ("string", b'"ping"', ErrorCode.INVALID_REQUEST, None),
    ("null", b"null", ErrorCode.INVALID_REQUEST, None),
    ("true", b"true", ErrorCode.INVALID_REQUEST, None),
    # Wrong or missing "jsonrpc" on a request: -32600, keeping the readable id.
    ("no-jsonrpc", dumps({"id": 1, "method": "ping"}), ErrorCode.INVALID_REQUEST, 1),
    (
        "jsonrpc-1.0",
        dumps({"jsonrpc": "1.0", "id": "x", "method": "ping"}),
        ErrorCode.INVALID_REQUEST,
        "x",
    ),
    (
        "jsonrpc-number",
        dumps({"jsonrpc": 2.0, "id": 1, "method": "ping"}),
        ErrorCode.INVALID_REQUEST,
        1,
    ),
    (
        "jsonrpc-null",
        dumps({"jsonrpc": None, "id": 1, "method": "ping"}),
        ErrorCode.INVALID_REQUEST,
        1,
    ),
    ("no-jsonrpc-bad-id", dumps({"id": True, "method": "ping"}), ErrorCode.INVALID_REQUEST, None),
    # Ids that are not a string or an integer: -32600 with id null (BP-02, BP-03).
    (
        "id-null",
        dumps({"jsonrpc": "2.0", "id": None, "method": "ping"}),
        ErrorCode.INVALID_REQUEST,
        None,
    ),
    (
        "id-true",
        dumps({"jsonrpc": "2.0", "id": True, "method": "ping"}),
        ErrorCode.INVALID_REQUEST,
        None,
    ),
    (
        "id-false",
        dumps({"jsonrpc": "2.0", "id": False, "method": "ping"}),
        ErrorCode.INVALID_REQUEST,
        None,
    ),
    (
        "id-float",
        dumps({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}),
        ErrorCode.INVALID_REQUEST,
        None,
    ),
    (
        "id-integral-float",
        b'{"jsonrpc":"2.0","id":1.0,"method":"ping"}',
        ErrorCode.INVALID_REQUEST,
        None,
    ),
    (
        "id-list",
        dumps({"jsonrpc": "2.0", "id": [1], "method": "ping"}),
        ErrorCode.INVALID_REQUEST,
        None,
    ),
    (
        "id-object",
        dumps({"jsonrpc": "2.0", "id": {}, "method": "ping"}),
        ErrorCode.INVALID_REQUEST,
        None,
    ),
    # orjson reads an integer beyond 64 bits as a float, so such an id is refused.
    (
        "id-huge-int",
        b'{"jsonrpc":"2.0","id":100000000000000000000000,"method":"ping"}',
        ErrorCode.INVALID_REQUEST,
        None,
    ),
    (
        "id-2**64",
        b'{"jsonrpc":"2.0","id":18446744073709551616,"method":"ping"}',
        ErrorCode.INVALID_REQUEST,
        None,
    ),
    # "method" must be a string.
    (
        "method-number",
        dumps({"jsonrpc": "2.0", "id": 1, "method": 5}),
        ErrorCode.INVALID_REQUEST,
        1,
    ),
    (
        "method-null",
        dumps({"jsonrpc": "2.0", "id": 1, "method": None}),
        ErrorCode.INVALID_REQUEST,
        1,
    ),
    (
        "method-number-no-id",
        dumps({"jsonrpc": "2.0", "method": 5}),
        ErrorCode.INVALID_REQUEST,
        None,
    ),
    # A request that is also a response.
    (
        "method-and-result",
        dumps({"jsonrpc": "2.0", "id": 1, "method": "ping", "result": {}}),
        ErrorCode.INVALID_REQUEST,
        1,
    ),
    (
        "method-and-error",
        dumps({"jsonrpc": "2.0", "id": 1, "method": "ping", "error": {"code": 1, "message": "m"}}),
        ErrorCode.INVALID_REQUEST,
        1,
    ),
    # "params" must be an object: -32602, with the request's id.
    (
        "params-list",
        dumps({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": [1]}),
        ErrorCode.INVALID_PARAMS,
        1,
    ),
    (
        "params-string",
        dumps({"jsonrpc": "2.0", "id": "r", "method": "ping", "params": "x"}),
        ErrorCode.INVALID_PARAMS,
        "r",
    ),
    (
        "params-number",
        dumps({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": 0}),
        ErrorCode.INVALID_PARAMS,
        1,
    ),
    (
        "params-false",
        dumps({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": False}),
        ErrorCode.INVALID_PARAMS,
        1,
    ),
]


@pytest.mark.spec("BP-01", "BP-02", "BP-03", "BP-07", "BP-08")
@pytest.mark.parametrize(
    ("frame", "code", "reply_id"),
    [row[1:] for row in REPLY_ROWS],
    ids=[row[0] for row in REPLY_ROWS],
)
def test_malformed_frame_gets_an_error_reply(
    frame: bytes, code: ErrorCode, reply_id: object
) -> None:
    error = refused(frame)
    assert_reply(error, code, reply_id)
    # The reply itself is a valid frame (id null stays null on the wire).
    wire = orjson.loads(encode(error.reply))  # type: ignore[arg-type]
    assert wire["id"] == reply_id
    assert wire["error"]["code"] == code


# --- refusals that must not be answered ------------------------------------------

NO_REPLY_ROWS: list[tuple[str, bytes, str]] = [
    # Broken responses: answering a response would start a ping-pong of errors.
    (
        "both-result-and-error",
        dumps({"jsonrpc": "2.0", "id": 1, "result": {}, "error": {"code": 1, "message": "m"}}),
        "both",
    ),
    ("empty-object", b"{}", "jsonrpc"),
    ("response-no-jsonrpc", dumps({"id": 1, "result": {}}), "jsonrpc"),
    ("response-jsonrpc-1.0", dumps({"jsonrpc": "1.0", "id": 1, "result": {}}), "jsonrpc"),
    ("result-not-object", dumps({"jsonrpc": "2.0", "id": 1, "result": [1]}), "object"),
    ("result-null", dumps({"jsonrpc": "2.0", "id": 1, "result": None}), "object"),
    ("result-id-null", dumps({"jsonrpc": "2.0", "id": None, "result": {}}), "id"),
    ("result-no-id", dumps({"jsonrpc": "2.0", "result": {}}), "id"),
    ("result-id-bool", dumps({"jsonrpc": "2.0", "id": True, "result": {}}), "id"),
    ("error-not-object", dumps({"jsonrpc": "2.0", "id": 1, "error": "boom"}), "error"),
    ("error-no-code", dumps({"jsonrpc": "2.0", "id": 1, "error": {"message": "m"}}), "error"),
    (
        "error-bool-code",
        dumps({"jsonrpc": "2.0", "id": 1, "error": {"code": True, "message": "m"}}),
        "error",
    ),
    (
        "error-float-code",
        dumps({"jsonrpc": "2.0", "id": 1, "error": {"code": 1.5, "message": "m"}}),
        "error",
    ),
    (
        "error-message-not-str",
        dumps({"jsonrpc": "2.0", "id": 1, "error": {"code": 1, "message": 2}}),
        "error",
    ),
    (
        "error-id-float",
        dumps({"jsonrpc": "2.0", "id": 1.5, "error": {"code": 1, "message": "m"}}),
        "id",
    ),
    # A notification is never answered (BP-11), even when its params are not an object.
    ("notification-params-list", dumps({"jsonrpc": "2.0", "method": "n", "params": [1]}), "params"),
    (
        "notification-params-string",
        dumps({"jsonrpc": "2.0", "method": "n", "params": "x"}),
        "params",
    ),
]


@pytest.mark.spec("BP-06", "BP-07", "BP-08", "BP-11")
@pytest.mark.parametrize(
    ("frame", "word"), [row[1:] for row in NO_REPLY_ROWS], ids=[row[0] for row in NO_REPLY_ROWS]
)
def test_malformed_frame_without_a_reply(frame: bytes, word: str) -> None:
    error = refused(frame)
    assert error.reply is None
    assert word in error.detail


# --- batches (BP-18, BP-19) -------------------------------------------------------

REQ = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
NOTE = {"jsonrpc": "2.0", "method": "notifications/initialized"}
RESP = {"jsonrpc": "2.0", "id": 9, "result": {}}


@pytest.mark.spec("BP-19")
@pytest.mark.parametrize("batch", [[REQ], [REQ, NOTE], [], [1, 2]])
def test_batch_refused_outside_2025_03_26(batch: list[Any]) -> None:
    error = refused(dumps(batch))
    assert_reply(error, ErrorCode.INVALID_REQUEST, None)
    assert "batch" in error.detail


@pytest.mark.spec("BP-18")
def test_batch_elements_decoded_one_by_one_when_allowed() -> None:
    items = decode(
        dumps([REQ, NOTE, RESP, 5, {"jsonrpc": "2.0", "id": True, "method": "x"}]), allow_batch=True
    )
    assert items[:3] == [
        Request(1, "ping"),
        Notification("notifications/initialized"),
        Response(9, {}),
    ]
    assert isinstance(items[3], FrameError)
    assert_reply(items[3], ErrorCode.INVALID_REQUEST, None)
    assert isinstance(items[4], FrameError)
    assert_reply(items[4], ErrorCode.INVALID_REQUEST, None)


@pytest.mark.spec("BP-18")
def test_single_object_still_fine_when_batches_allowed() -> None:
    assert decode(dumps(REQ), allow_batch=True) == [Request(1, "ping")]


@pytest.mark.spec("BP-18")
def test_empty_batch_refused_even_when_allowed() -> None:
    error = refused(b"[]", allow_batch=True)
    assert_reply(error, ErrorCode.INVALID_REQUEST, None)
    assert "Empty" in error.detail


@pytest.mark.spec("BP-18")
def test_nested_batch_element_is_not_an_object() -> None:
    [item] = decode(dumps([[REQ]]), allow_batch=True)
    assert isinstance(item, FrameError)
    assert_reply(item, ErrorCode.INVALID_REQUEST, None)


# --- size and depth bounds --------------------------------------------------------


def test_default_max_size_is_sixteen_mebibytes() -> None:
    assert DEFAULT_MAX_MESSAGE_SIZE == 16 * 1024 * 1024


@pytest.mark.parametrize("allow_batch", [False, True])
def test_oversize_frame_refused_before_parsing_with_a_clear_message(allow_batch: bool) -> None:
    frame = dumps({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": "a" * 100}})
    # Exactly at the limit is fine; one byte over is not (and is not even parsed:
    # the same bytes with broken JSON give the same answer).
    assert decode(frame, max_size=len(frame), allow_batch=allow_batch) == [
        Request(1, "ping", {"x": "a" * 100})
    ]
    # The intact frame's id is read from its head (issue 17); the broken one's is not.
    for data, request_id in ((frame, 1), (frame[:-1] + b"!!", None)):
        error = refused(data, max_size=len(frame) - 1, allow_batch=allow_batch)
        assert_reply(error, ErrorCode.INVALID_REQUEST, request_id)
        assert f"{len(data)} bytes" in error.detail
        assert f"limit of {len(frame) - 1} bytes" in error.detail


@pytest.mark.parametrize(
    "frame",
    [
        b"[" * 2000 + b"]" * 2000,
        b'{"jsonrpc":"2.0","id":1,"method":"ping","params":' + b'{"a":' * 2000 + b"1" + b"}" * 2001,
        b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":'
        + b"[" * 2000
        + b"]" * 2000
        + b"}}",
    ],
    ids=["array", "object", "array-in-params"],
)
@pytest.mark.parametrize("allow_batch", [False, True])
def test_deep_nesting_is_a_clean_parse_error(frame: bytes, allow_batch: bool) -> None:
    error = refused(frame, allow_batch=allow_batch)
    assert_reply(error, ErrorCode.PARSE_ERROR, None)


def test_moderate_nesting_is_fine() -> None:
    params = {"a": [[[[{"b": [1]}]]]]}
    assert decode(dumps({"jsonrpc": "2.0", "id": 1, "method": "x", "params": params})) == [
        Request(1, "x", params)
    ]


# --- strict JSON on the way out ---------------------------------------------------


def nested(depth: int) -> Any:
    """A list nested *depth* levels deep (deeper than orjson will write)."""
    value: Any = []
    for _ in range(depth):
        value = [value]
    return value


NOT_JSON: list[tuple[str, Any]] = [
    ("nan", math.nan),
    ("inf", math.inf),
    ("-inf", -math.inf),
    ("nested-nan", {"a": [1, {"b": math.nan}]}),
    ("tuple-inf", (1.0, math.inf)),
    ("ordered-dict-nan", collections.OrderedDict(x=math.nan)),
    ("defaultdict-nan", collections.defaultdict(int, x=math.inf)),
    ("list-subclass-nan", type("L", (list,), {})([math.nan])),
    ("2**64", 2**64),
    ("-2**63-1", -(2**63) - 1),
    ("2**100", 2**100),
    ("set", {1, 2}),
    ("object", object()),
    ("bytes", b"x"),
    ("int-key", {1: "x"}),
    ("lone-surrogate", "\ud800"),
    ("too-deep", nested(1000)),
]


@pytest.mark.spec("BP-01")
@pytest.mark.parametrize(("value"), [row[1] for row in NOT_JSON], ids=[row[0] for row in NOT_JSON])
@pytest.mark.parametrize("where", ["request", "notification", "response", "error-data"])
def test_encode_refuses_values_that_are_not_strict_json(value: Any, where: str) -> None:
    message: Message
    if where == "request":
        message = Request(1, "tools/call", {"arguments": {"v": value}})
    elif where == "notification":
        message = Notification("notifications/progress", {"v": value})
    elif where == "response":
        message = Response(1, {"v": value})
    else:
        message = ErrorResponse(1, ErrorObject(-32603, "m", {"v": value}))
    with pytest.raises(LocalProtocolError):
        encode(message)


@pytest.mark.parametrize("value", [2**63 - 1, -(2**63), 2**64 - 1, 0.1, -0.0, 1e308, True, None])
def test_encode_accepts_64_bit_ints_and_finite_floats(value: Any) -> None:
    data = encode(Response(1, {"v": value}))
    assert orjson.loads(data)["result"]["v"] == value


# --- text -------------------------------------------------------------------------

TEXTS = [
    "héllo",
    "世界",
    "🎉 emoji",
    "line\nbreak",
    "cr\rlf\r\n",
    "tab\t",
    "nul\x00",
    "\u2028\u2029",
    '"quoted"\\',
]


@pytest.mark.parametrize("text", TEXTS)
def test_text_round_trips_and_encoding_is_line_safe(text: str) -> None:
    message = Request(text, "tools/call", {"name": text, "arguments": {text: [text]}})
    data = encode(message)
    assert b"\n" not in data
    assert b"\r" not in data
    assert decode(data) == [message]
    assert decode(data.decode("utf-8")) == [message]


def test_non_ascii_is_written_as_utf8_not_escaped() -> None:
    data = encode(Notification("n", {"t": "héllo 世界"}))
    assert "héllo 世界".encode() in data


# --- properties -------------------------------------------------------------------

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
# For decode only: integers of any size (the stdlib writes them; orjson reads the
# ones beyond 64 bits as floats).
wild_json_values = st.recursive(
    json_scalars | st.integers(),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
envelope_keys = st.sampled_from(
    ["jsonrpc", "id", "method", "params", "result", "error", "code", "message", "data"]
)
# Objects that look like JSON-RPC messages, so the property reaches deep branches.
envelope_like = st.dictionaries(
    envelope_keys,
    json_values
    | st.sampled_from(["2.0", "ping", 1, "x", {}])
    | st.fixed_dictionaries({"code": st.integers(), "message": st.text()}),
    max_size=6,
)
any_frame_value = (
    envelope_like | wild_json_values | st.lists(envelope_like | wild_json_values, max_size=4)
)


def check_decoded(items: list[Message | FrameError]) -> None:
    assert items, "decode always yields at least one item"
    for item in items:
        assert isinstance(item, Request | Notification | Response | ErrorResponse | FrameError)
        if isinstance(item, Request | Response):
            assert is_valid_request_id(item.id)
        if isinstance(item, FrameError):
            assert item.detail
            if item.reply is not None:
                assert item.reply.id is None or is_valid_request_id(item.reply.id)
                assert item.reply.error.code in {c.value for c in ErrorCode}
                encode(item.reply)  # the reply is always writable


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200), st.booleans())
def test_decode_never_raises_on_arbitrary_bytes(data: bytes, allow_batch: bool) -> None:
    check_decoded(decode(data, allow_batch=allow_batch))


@settings(max_examples=300, deadline=None)
@given(any_frame_value, st.booleans())
def test_decode_never_raises_on_arbitrary_json(value: Any, allow_batch: bool) -> None:
    # The stdlib writes integers of any size, so huge ids and codes reach decode.
    items = decode(json.dumps(value, ensure_ascii=False), allow_batch=allow_batch)
    check_decoded(items)
    if isinstance(value, list) and value and allow_batch:
        assert len(items) == len(value)


messages = st.one_of(
    st.builds(
        Request,
        st.integers(min_value=-(2**63), max_value=2**64 - 1) | st.text(max_size=10),
        st.text(min_size=1, max_size=20),
        st.none() | st.dictionaries(st.text(max_size=8), json_values, max_size=4),
    ),
    st.builds(
        Notification,
        st.text(min_size=1, max_size=20),
        st.none() | st.dictionaries(st.text(max_size=8), json_values, max_size=4),
    ),
    st.builds(
        Response,
        st.integers(min_value=0, max_value=2**63) | st.text(max_size=10),
        st.dictionaries(st.text(max_size=8), json_values, max_size=4),
    ),
    st.builds(
        ErrorResponse,
        st.none() | st.integers(min_value=0, max_value=2**63) | st.text(max_size=10),
        st.builds(ErrorObject, st.integers(-(2**63), 2**63), st.text(max_size=20), json_values),
    ),
)


@settings(max_examples=300, deadline=None)
@given(messages)
def test_encode_decode_round_trip_and_no_raw_newline(message: Message) -> None:
    data = encode(message)
    assert b"\n" not in data
    assert decode(data) == [message]


def test_nested_id_and_method_keys_are_not_duplicates() -> None:
    # The check reads the top level's own keys: params may hold "id" and
    # "method" keys of their own, and may repeat them (they are data).
    data = (
        b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"t",'
        b'"arguments":{"id":1,"method":"x","rows":[{"id":2},{"id":3}]}}}'
    )
    [message] = decode(data)
    assert isinstance(message, Request)
    assert message.id == 7
    assert message.params == {
        "name": "t",
        "arguments": {"id": 1, "method": "x", "rows": [{"id": 2}, {"id": 3}]},
    }
