"""Phase one of the two-phase decode: bytes to JSON-RPC envelopes, and back.

Decoding stops at the envelope: it tells a parse error (-32700) from a bad envelope
(-32600) and keeps the id whenever it is readable, so the reply can name it. Typing
``params`` by method (which gives -32601 and -32602) is phase two, in
:mod:`trio_mcp.protocol._connection`, because only the connection knows the
negotiated revision and, for responses, which method an id belongs to.

Strict JSON both ways: NaN and Infinity are refused in and never written out;
integers beyond 64 bits are refused on the way out (orjson reads them as floats on the
way in, so such an id is not an integer and is refused); nesting deeper than 1024
levels is a parse error; the size bound is checked before parsing.

Spec: BP-01..BP-03, BP-06..BP-10, BP-18, BP-19.
"""

from __future__ import annotations

import json
import math
from sys import intern
from typing import Any

import attrs
import orjson

from ._errors import ErrorCode, NotJSON
from ._head import HEAD_SCAN_SIZE, TAIL_SCAN_SIZE, OversizeFrame, scan_frame
from ._messages import (
    ErrorObject,
    ErrorResponse,
    Message,
    Notification,
    Request,
    RequestId,
    Response,
)

#: Default bound on one inbound message (16 MiB), on every transport; each session
#: may set its own. It is also the memory one frame may take while it is read: a
#: stdio line, an HTTP body or a WebSocket message is buffered up to this size.
DEFAULT_MAX_MESSAGE_SIZE = 16 * 1024 * 1024


@attrs.frozen(slots=True)
class FrameError:
    """A frame that could not become a message.

    ``reply`` is the error response owed to the peer (None when nothing may be sent
    back, e.g. for a malformed response). ``response_id`` is the readable id of a
    malformed *response* (its caller can be failed at once); ``too_large`` marks a frame
    over the size bound (never parsed): its id, when a bounded scan of its head and tail
    reads one, is the reply's id for a request and ``response_id`` for a response.

    Spec: J-07, J-08.
    """

    reply: ErrorResponse | None
    detail: str
    response_id: RequestId | None = None
    too_large: bool = False


def _bad(code: ErrorCode, detail: str, request_id: RequestId | None = None) -> FrameError:
    return FrameError(ErrorResponse(request_id, ErrorObject(int(code), detail)), detail)


def decode(
    data: bytes | bytearray | memoryview | str,
    *,
    max_size: int = DEFAULT_MAX_MESSAGE_SIZE,
    allow_batch: bool = False,
) -> list[Message | FrameError]:
    """Decode one transport frame into envelopes.

    A frame holds one message, or (only when *allow_batch*, i.e. revision
    2025-03-26) a JSON array of messages; an array otherwise is -32600.
    Never raises for bad input: every problem is a :class:`FrameError`.
    """
    if type(data) is OversizeFrame:  # only the head of a frame a transport dropped
        return [too_large(data, data.size, data.limit)]
    # The bound is on bytes: str input is measured as UTF-8.
    size = len(data.encode()) if isinstance(data, str) else len(data)
    if size > max_size:
        return [too_large(data, size, max_size)]
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        return [_bad(ErrorCode.PARSE_ERROR, f"Parse error: {exc}")]
    if type(obj) is dict:
        # The two substring counts of duplicate_routing_key, inline for the
        # commonest frame (bytes naming each key once): one call less a frame.
        if type(data) is not bytes or data.count(b'"id"') > 1 or data.count(b'"method"') > 1:
            duplicate = duplicate_routing_key(data)
            if duplicate is not None:
                return [_bad(ErrorCode.INVALID_REQUEST, duplicate)]
        return [decode_object(obj)]
    if isinstance(obj, list):
        if not allow_batch:
            return [
                _bad(
                    ErrorCode.INVALID_REQUEST,
                    "JSON-RPC batches are not accepted in this protocol revision",
                )
            ]
        if not obj:
            return [_bad(ErrorCode.INVALID_REQUEST, "Empty JSON-RPC batch")]
        return [decode_object(item) for item in obj]
    return [decode_object(obj)]


def too_large(data: bytes | bytearray | memoryview | str, size: int, max_size: int) -> FrameError:
    """The refusal of a frame of *size* bytes over *max_size*, never parsed.

    Only its head and tail are read (4 KiB each, :func:`~trio_mcp.protocol._head.scan_frame`,
    which says when the id is found): a request's id becomes the reply's id, so
    its caller is answered at once; a response's id is ``response_id`` (the call
    it answers can fail at once) and nothing is sent back. Otherwise the reply has
    id null.
    """
    detail = f"Message of {size} bytes exceeds the limit of {max_size} bytes"
    tail: bytes | bytearray | memoryview
    if type(data) is OversizeFrame:
        tail = data.tail
    elif isinstance(data, str):
        tail = data[-TAIL_SCAN_SIZE:].encode("utf-8", "surrogatepass")
    else:
        tail = data[-TAIL_SCAN_SIZE:]
    head = scan_frame(data[:HEAD_SCAN_SIZE], tail, size)
    if head is not None and not head.is_request:
        return FrameError(None, detail, response_id=head.id, too_large=True)
    request_id = None if head is None else head.id
    reply = ErrorResponse(request_id, ErrorObject(int(ErrorCode.INVALID_REQUEST), detail))
    return FrameError(reply, detail, too_large=True)


def duplicate_routing_key(data: bytes | bytearray | memoryview | str) -> str | None:
    """Why the top-level object is refused if it repeats ``"id"`` or
    ``"method"`` (J-12), else None.

    JSON parsers disagree on duplicate keys (orjson keeps the last, others the
    first), so a proxy and this session could route one frame differently: such
    a frame is refused. Two substring counts rule most frames out; only a frame
    that mentions a key twice (a nested ``"id"`` in the params, say) is parsed
    again, by the standard library, to look at the top level's own keys.
    """
    text = bytes(data) if isinstance(data, memoryview) else data
    id_key, method_key = ('"id"', '"method"') if isinstance(text, str) else (b'"id"', b'"method"')
    if text.count(id_key) < 2 and text.count(method_key) < 2:  # type: ignore[arg-type]
        return None
    top: list[list[tuple[str, Any]]] = []

    def keep(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        top[:] = [pairs]  # the outermost object is built last
        return {}

    try:
        json.loads(text, object_pairs_hook=keep)
    except RecursionError:  # nesting orjson accepts (< 1024) can be too deep here
        return 'Too deeply nested to check for duplicate "id" or "method" keys'
    keys = [key for key, _ in top[0]] if top else []
    if keys.count("id") > 1 or keys.count("method") > 1:
        return 'Duplicate "id" or "method" key'
    return None


def decode_object(obj: Any) -> Message | FrameError:
    """Classify one decoded JSON value as a request, notification or response."""
    if not isinstance(obj, dict):
        return _bad(ErrorCode.INVALID_REQUEST, "A JSON-RPC message must be a JSON object")
    has_id = "id" in obj
    raw_id = obj.get("id")
    # is_valid_request_id, inline (every message): an int (not bool) or a str.
    readable_id: RequestId | None = (
        raw_id if type(raw_id) is int or isinstance(raw_id, str) else None
    )
    if obj.get("jsonrpc") != "2.0":
        if "method" not in obj:
            # A response with a bad version: nothing we could reply to.
            return FrameError(None, 'Response without "jsonrpc": "2.0"', readable_id)
        return _bad(ErrorCode.INVALID_REQUEST, '"jsonrpc" must be "2.0"', readable_id)

    if "method" in obj:
        method = obj["method"]
        if not isinstance(method, str):
            return _bad(ErrorCode.INVALID_REQUEST, '"method" must be a string', readable_id)
        # One string per method name, not one per message: a request's record
        # keeps its method for as long as the session remembers it (thousands),
        # and ``sys.intern`` strings die with their last reference.
        method = intern(method)
        if "result" in obj or "error" in obj:
            return _bad(
                ErrorCode.INVALID_REQUEST,
                "A message cannot be both a request and a response",
                readable_id,
            )
        params = obj.get("params")
        if params is not None and not isinstance(params, dict):
            if not has_id:
                # A notification is never answered (BP-11), not even to say its
                # params are bad; the connection likewise ignores a notification
                # whose params do not match its type.
                return FrameError(None, 'Notification "params" must be an object')
            return _bad(ErrorCode.INVALID_PARAMS, '"params" must be an object', readable_id)
        if not has_id:
            return Notification(method, params)
        if readable_id is None:
            return _bad(
                ErrorCode.INVALID_REQUEST,
                "A request id must be a string or an integer (not null, bool or float)",
            )
        return Request(readable_id, method, params)

    # A response: never answered, so problems carry no reply; a readable id
    # lets the session fail the call waiting for it (J-07, J-08).
    has_result = "result" in obj
    has_error = "error" in obj
    if has_result and has_error:
        return FrameError(None, 'Response has both "result" and "error"', readable_id)
    if not has_result and not has_error:
        # Neither a request nor a response (e.g. a misspelt "Method"): refused
        # as an invalid request, unless it is a malformed answer to a call of
        # ours, which then fails (the connection decides by the id).
        detail = 'A message needs "method", "result" or "error"'
        bad = _bad(ErrorCode.INVALID_REQUEST, detail, readable_id)
        return FrameError(bad.reply, detail, readable_id)
    if has_result:
        if readable_id is None:
            return FrameError(None, "Success response without a valid id")
        result = obj["result"]
        if not isinstance(result, dict):
            return FrameError(None, '"result" must be an object', readable_id)
        return Response(readable_id, result)
    error = obj["error"]
    if (
        not isinstance(error, dict)
        or type(error.get("code")) is not int
        or not isinstance(error.get("message"), str)
    ):
        return FrameError(
            None, '"error" must be an object with integer code and string message', readable_id
        )
    if raw_id is not None and readable_id is None:
        return FrameError(None, "Error response with an invalid id")
    return ErrorResponse(
        readable_id, ErrorObject(error["code"], error["message"], error.get("data"))
    )


def to_json(message: Message) -> dict[str, Any]:
    """The wire object of *message* (with ``jsonrpc`` added)."""
    if isinstance(message, Request):
        out: dict[str, Any] = {"jsonrpc": "2.0", "id": message.id, "method": message.method}
        if message.params is not None:
            out["params"] = message.params
        return out
    if isinstance(message, Notification):
        out = {"jsonrpc": "2.0", "method": message.method}
        if message.params is not None:
            out["params"] = message.params
        return out
    if isinstance(message, Response):
        return {"jsonrpc": "2.0", "id": message.id, "result": message.result}
    return {"jsonrpc": "2.0", "id": message.id, "error": message.error.to_json()}


def encode(message: Message) -> bytes:
    """Serialize *message* as one line-safe JSON text (no raw newlines).

    Raises:
        NotJSON: the message holds NaN/Infinity, an integer beyond
            64 bits, or a value that is not JSON.
    """
    obj = to_json(message)
    try:
        data = orjson.dumps(obj)
    except TypeError as exc:  # orjson.JSONEncodeError subclasses TypeError
        raise NotJSON(f"cannot encode {type(message).__name__}: {exc}") from exc
    # orjson writes NaN/Infinity as null: only a frame that contains "null"
    # somewhere can hold one, so the (per node) walk is skipped for the rest.
    if b"null" in data:
        _check_finite(obj)
    return data


def encode_result(request_id: RequestId, result: Any) -> bytes:
    """``encode(Response(request_id, result))`` without building the message
    (every answered request goes through it); same errors."""
    obj = {"jsonrpc": "2.0", "id": request_id, "result": result}
    try:
        data = orjson.dumps(obj)
    except TypeError as exc:
        raise NotJSON(f"cannot encode Response: {exc}") from exc
    if b"null" in data:
        _check_finite(obj)
    return data


def _check_finite(value: Any) -> None:
    # orjson silently writes NaN/Infinity as null; refuse them instead. Walks only
    # containers, so the cost is per node, not per byte.
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is dict:
            stack.extend(item.values())
        elif kind is list or kind is tuple:
            stack.extend(item)
        elif kind is float:
            if not math.isfinite(item):
                raise NotJSON(f"{item!r} is not valid JSON (NaN and Infinity are refused)")
        elif kind is str or kind is int or item is None or kind is bool:
            pass
        # orjson also serializes subclasses of dict and list (OrderedDict,
        # defaultdict, ...) and would write a NaN inside them as null; walk them
        # too.
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
