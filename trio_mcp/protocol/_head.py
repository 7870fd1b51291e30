"""A bounded scan of a frame's head for its top-level request id.

A frame over the size bound is refused unparsed, but its caller should not wait for
a timeout: :func:`scan_head` reads at most :data:`HEAD_SCAN_SIZE` bytes of it and
finds the top-level ``"id"`` member and whether the object is a request (it has a
top-level ``"method"``) or a response, so the refusal (or, for a response, the
failed call) can name that id. It never parses the frame in full, and it runs only
on refused frames, never on the hot path.

The walk tracks JSON strings (with their escapes) and nesting depth; only members of
the outermost object (depth 1) count, so an ``"id"`` nested in ``params`` or a
string value ``"id"`` is never taken for the frame's id. The answer is None whenever
it cannot be sure: the head is not an object, is malformed, ends before the id's
value does, holds only a nested ``"id"``, repeats the top-level ``"id"``, or has an
id that is not an integer or a string (``true``, ``1.5``, ``null`` are not ids).

When the whole frame fits in the head, the scan reads it to its end and agrees with a
full parse. When the head is cut, ``is_request`` needs a top-level ``"method"`` seen
in the head, and a response needs a top-level ``"result"`` or ``"error"`` seen there
(and no ``"method"``); with neither, the kind is unsure and the answer is None. A
duplicate ``"id"`` beyond the head cannot be seen; the frame is refused either way.

Spec: BP-04, BP-06 (the id of a refused request); reliability X-08.
"""

from __future__ import annotations

import json

import attrs

from ._messages import RequestId, is_valid_request_id

#: Bytes of an oversize frame's head that :func:`scan_head` reads (4 KiB).
HEAD_SCAN_SIZE = 4096

_WS = frozenset(b" \t\r\n")
_DELIM = frozenset(b" \t\r\n,]}")
_INT_MIN = -(1 << 63)
_INT_MAX = (1 << 64) - 1  # orjson reads integers up to u64 as int


class OversizeFrame(bytes):
    """The head of a frame over a transport's bound, handed on in its place.

    A transport that drops an oversize frame as it reads it (stdio framing) keeps
    only these first bytes and passes them on as this marker, so the codec refuses
    the frame by its ``size`` (bytes seen, at least ``limit + 1``) against the
    transport's ``limit``, and names the id :func:`scan_head` reads from the head.
    It compares equal to those bytes.
    """

    size: int
    limit: int

    def __new__(cls, head: bytes, size: int, limit: int) -> OversizeFrame:
        self = super().__new__(cls, head)
        self.size = size
        self.limit = limit
        return self


@attrs.frozen(slots=True)
class HeadScan:
    """What :func:`scan_head` found: the top-level id, and whether the frame is a
    request (a top-level ``"method"``) or a response."""

    id: RequestId
    is_request: bool


class _Unsure(Exception):
    pass


def scan_head(
    data: bytes | bytearray | memoryview | str,
    limit: int = HEAD_SCAN_SIZE,
    *,
    size: int | None = None,
) -> HeadScan | None:
    """The top-level id and kind of the JSON object in *data*, from its first
    *limit* bytes only; None when that head does not make them certain.

    *size*: the whole frame's size in bytes when *data* is only its head (an
    :class:`OversizeFrame`); by default *data* is the whole frame.

    Pure and sans-I/O; never raises for any input.
    """
    if isinstance(data, str):
        # A character is at least one byte: this many characters cover the head.
        head = data[:limit].encode("utf-8", "surrogatepass")[:limit]
        whole = len(data) <= limit and len(head) == len(data.encode("utf-8", "surrogatepass"))
    else:
        head = bytes(data[:limit])
        whole = len(data) <= limit
    complete = whole and (size is None or size == len(head))
    try:
        return _scan(head, complete)
    except (_Unsure, IndexError, ValueError, RecursionError):
        return None


def _skip_ws(head: bytes, i: int) -> int:
    n = len(head)
    while i < n and head[i] in _WS:
        i += 1
    return i


def _string_end(head: bytes, i: int) -> int:
    """*i* is at an opening quote: the index just past the closing one."""
    n = len(head)
    i += 1
    while True:
        if i >= n:
            raise _Unsure
        c = head[i]
        if c == 0x22:  # "
            return i + 1
        if c == 0x5C:  # backslash: the next byte is escaped
            i += 2
            continue
        if c < 0x20:
            raise _Unsure  # a raw control character: malformed
        i += 1


def _decode_string(token: bytes) -> str:
    if b"\\" not in token:
        return token[1:-1].decode("utf-8")
    value = json.loads(token)
    if not isinstance(value, str):  # pragma: no cover - a quoted token is a string
        raise _Unsure
    return value


def _value_end(head: bytes, i: int) -> int:
    """Skip one JSON value starting at *i*; the index just past it."""
    c = head[i]
    if c == 0x22:
        return _string_end(head, i)
    if c in b"{[":
        depth = 0
        n = len(head)
        while i < n:
            c = head[i]
            if c == 0x22:
                i = _string_end(head, i)
                continue
            if c in b"{[":
                depth += 1
            elif c in b"}]":
                depth -= 1
                if depth == 0:
                    return i + 1
            i += 1
        raise _Unsure
    # A number or a literal: up to the next delimiter, which must be in the head.
    n = len(head)
    start = i
    while i < n and head[i] not in _DELIM:
        i += 1
    if i >= n or i == start:
        raise _Unsure
    return i


def _parse_id(token: bytes) -> RequestId:
    if token[:1] == b'"':
        return _decode_string(token)
    text = token.decode("ascii")
    # A JSON integer: optional minus, then 0 or a non-zero digit run.
    digits = text[1:] if text.startswith("-") else text
    if not digits.isdigit() or not digits.isascii() or (len(digits) > 1 and digits[0] == "0"):
        raise _Unsure  # a float, a literal (true, null), or not JSON
    value = int(text)
    if not _INT_MIN <= value <= _INT_MAX:
        raise _Unsure  # orjson would read it as a float, which is no id
    return value


def _scan(head: bytes, complete: bool) -> HeadScan | None:
    i = _skip_ws(head, 0)
    if head[i] != 0x7B:  # {
        return None
    i += 1
    request_id: RequestId | None = None
    found_id = False
    has_method = False
    has_answer = False  # "result" or "error"
    first = True
    n = len(head)
    while True:
        i = _skip_ws(head, i)
        if i >= n:
            break  # the head ends here
        c = head[i]
        if c == 0x7D and first:  # } of an empty object
            i += 1
            return _finish(head, i, complete, request_id, found_id, has_method, has_answer, True)
        if c != 0x22:
            raise _Unsure
        end = _string_end(head, i)
        key = _decode_string(head[i:end])
        i = _skip_ws(head, end)
        if head[i] != 0x3A:  # :
            raise _Unsure
        i = _skip_ws(head, i + 1)
        if i >= n:
            break
        if key == "id":
            if found_id:
                return None  # a duplicate top-level "id" (J-12): routing is ambiguous
            end = _value_end(head, i)
            token = head[i:end]
            if token[:1] in (b"{", b"["):
                raise _Unsure
            request_id = _parse_id(token)
            found_id = True
            i = end
        else:
            if key == "method":
                has_method = True
            elif key in ("result", "error"):
                has_answer = True
            try:
                i = _value_end(head, i)
            except _Unsure:
                if complete:
                    raise
                break  # the head ends inside this value
        first = False
        i = _skip_ws(head, i)
        if i >= n:
            break
        c = head[i]
        if c == 0x2C:  # ,
            i += 1
            continue
        if c == 0x7D:  # }
            i += 1
            return _finish(head, i, complete, request_id, found_id, has_method, has_answer, True)
        raise _Unsure
    return _finish(head, i, complete, request_id, found_id, has_method, has_answer, False)


def _finish(
    head: bytes,
    i: int,
    complete: bool,
    request_id: RequestId | None,
    found_id: bool,
    has_method: bool,
    has_answer: bool,
    closed: bool,
) -> HeadScan | None:
    if request_id is None or not found_id or not is_valid_request_id(request_id):
        return None
    if closed:
        if complete and _skip_ws(head, i) != len(head):
            return None  # something after the object: not one JSON value
        return HeadScan(request_id, has_method)
    if complete:
        return None  # the whole frame was read and the object never closed
    if has_method:
        return HeadScan(request_id, True)
    if has_answer:
        return HeadScan(request_id, False)
    return None  # the kind is decided beyond the head
