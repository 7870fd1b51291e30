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
#: Bytes of an oversize frame's tail that :func:`scan_frame` reads (4 KiB): a
#: top-level ``"id"`` written last (after a large ``params``) is found there.
TAIL_SCAN_SIZE = 4096

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
    It compares equal to those bytes. ``tail`` is the frame's last bytes (at most
    :data:`TAIL_SCAN_SIZE`; empty when the transport did not keep them), where a
    top-level ``"id"`` written after the large member is found.
    """

    size: int
    limit: int
    tail: bytes

    def __new__(cls, head: bytes, size: int, limit: int, tail: bytes = b"") -> OversizeFrame:
        self = super().__new__(cls, head)
        self.size = size
        self.limit = limit
        self.tail = tail
        return self


@attrs.frozen(slots=True)
class HeadScan:
    """What :func:`scan_head` found: the top-level id, and whether the frame is a
    request (a top-level ``"method"``) or a response."""

    id: RequestId
    is_request: bool


class _Unsure(Exception):
    """The head is malformed (or holds something that is no id)."""


class _End(Exception):
    """The head ended before the value (or key) being read did."""


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
    return _scan_safely(head, complete)[0]


def scan_frame(
    head: bytes | bytearray | memoryview | str,
    tail: bytes | bytearray | memoryview,
    size: int,
) -> HeadScan | None:
    """The top-level id and kind of an oversize frame of *size* bytes, from its
    *head* (first bytes, at most :data:`HEAD_SCAN_SIZE` read) and its *tail* (last
    bytes, at most :data:`TAIL_SCAN_SIZE` read); None when they do not make both
    certain.

    What is guaranteed (for a frame that is one valid JSON object): the id is
    found when it is a top-level member read whole within the head with only
    top-level members before it (``{"jsonrpc":"2.0","id":7,"method":...,
    "params":<large>}``), or when it is the *last* top-level member and lies
    within the tail (``{"method":...,"params":<large>,"id":7}``). An id between
    the large member and another member after it is beyond both and unread. The
    kind comes from the head either way: a top-level ``"method"`` seen there makes
    it a request, a ``"result"`` or ``"error"`` a response. A top-level ``"id"``
    in both head and tail (at different offsets) is a duplicate: None.

    Pure and sans-I/O; never raises for any input.
    """
    if isinstance(head, str):
        head = head[:HEAD_SCAN_SIZE].encode("utf-8", "surrogatepass")
    head = bytes(head[:HEAD_SCAN_SIZE])
    tail = bytes(tail[-TAIL_SCAN_SIZE:]) if tail else b""
    result, state = _scan_safely(head, size == len(head))
    if state is None or size == len(head):
        return result
    found = _scan_tail(tail)
    if found is None:
        return result
    tail_id, offset = found
    tail_offset = size - len(tail) + offset
    if state.id_offset >= 0:
        # The same member seen from both ends (a frame shorter than head + tail)
        # is one id; two offsets are a duplicate "id" (J-12).
        if state.id_offset != tail_offset:
            return None
        if state.found_id:
            return result
    if state.has_method:
        return HeadScan(tail_id, True)
    if state.has_answer:
        return HeadScan(tail_id, False)
    return None


def _scan_safely(head: bytes, complete: bool) -> tuple[HeadScan | None, _State | None]:
    try:
        return _scan(head, complete)
    except (_Unsure, _End, ValueError):
        return None, None


def _scan_tail(tail: bytes) -> tuple[RequestId, int] | None:
    """The id of the frame's last top-level member if that member is ``"id"``,
    read backwards from the closing brace, with the offset of its key in *tail*.

    The frame's last ``}`` closes the top-level object, so the value just before
    it belongs to the last top-level member, whose key is the string before the
    colon; a key's opening quote is preceded by ``,`` or ``{``. An escaped quote
    is told by the parity of the backslashes before it.
    """
    try:
        i = _skip_ws_back(tail, len(tail) - 1)
        if i < 0 or tail[i] != 0x7D:  # }
            return None
        end = _skip_ws_back(tail, i - 1)
        if end < 0:
            return None
        if tail[end] == 0x22:
            start = _string_start_back(tail, end)
        else:
            start = end
            while start > 0 and tail[start - 1] not in _WS and tail[start - 1] not in b",:{[":
                start -= 1
        value = tail[start : end + 1]
        i = _skip_ws_back(tail, start - 1)
        if i < 0 or tail[i] != 0x3A:  # :
            return None
        key_end = _skip_ws_back(tail, i - 1)
        if key_end < 0 or tail[key_end] != 0x22:
            return None
        key_start = _string_start_back(tail, key_end)
        before = _skip_ws_back(tail, key_start - 1)
        if before < 0 or tail[before] not in b",{":
            return None
        if _decode_string(tail[key_start : key_end + 1]) != "id":
            return None
        return _parse_id(value), key_start
    except (_Unsure, _End, ValueError, IndexError):
        return None


def _skip_ws_back(data: bytes, i: int) -> int:
    while i >= 0 and data[i] in _WS:
        i -= 1
    return i


def _string_start_back(data: bytes, end: int) -> int:
    """*end* is at a closing quote: the index of the string's opening quote."""
    j = end - 1
    while j >= 0:
        c = data[j]
        if c < 0x20:
            raise _Unsure  # a raw control character: malformed
        if c == 0x22:
            backslashes = 0
            k = j - 1
            while k >= 0 and data[k] == 0x5C:
                backslashes += 1
                k -= 1
            if k < 0:
                raise _End  # the run of backslashes may go on before the tail
            if backslashes % 2 == 0:
                return j
        j -= 1
    raise _End


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
            raise _End
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
        raise _End
    # A number or a literal: up to the next delimiter, which must be in the head.
    n = len(head)
    start = i
    while i < n and head[i] not in _DELIM:
        i += 1
    if i >= n:
        raise _End
    if i == start:
        raise _Unsure
    return i


def _parse_id(token: bytes) -> RequestId:
    if token[:1] == b'"':
        text = _decode_string(token)
        text.encode("utf-8")  # a lone surrogate (from an escape) is no JSON string: ValueError
        return text
    text = token.decode("ascii")
    # A JSON integer: optional minus, then 0 or a non-zero digit run.
    digits = text[1:] if text.startswith("-") else text
    if not digits.isdigit() or not digits.isascii() or (len(digits) > 1 and digits[0] == "0"):
        raise _Unsure  # a float, a literal (true, null), or not JSON
    value = int(text)
    if not _INT_MIN <= value <= _INT_MAX:
        raise _Unsure  # orjson would read it as a float, which is no id
    return value


def _at(head: bytes, i: int) -> int:
    if i >= len(head):
        raise _End
    return head[i]


def _scan(head: bytes, complete: bool) -> tuple[HeadScan | None, _State | None]:
    """The head's answer, and what it saw (None: nothing further can be trusted)."""
    i = _skip_ws(head, 0)
    if _at(head, i) != 0x7B:  # {
        return None, None
    i += 1
    state = _State()
    first = True
    try:
        while True:
            i = _skip_ws(head, i)
            c = _at(head, i)
            if c == 0x7D and first:  # } of an empty object
                return state.finish(head, i + 1, complete, closed=True), None
            if c != 0x22:
                raise _Unsure
            key_start = i
            end = _string_end(head, i)
            key = _decode_string(head[i:end])
            i = _skip_ws(head, end)
            if _at(head, i) != 0x3A:  # :
                raise _Unsure
            i = _skip_ws(head, i + 1)
            if key == "id" and not state.found_id:
                state.id_offset = key_start  # known from the key, even if its value is cut
            if key == "method":
                state.has_method = True  # known from the key, even if its value is cut
            elif key in ("result", "error"):
                state.has_answer = True
            _at(head, i)
            end = _value_end(head, i)
            if key == "id":
                if state.found_id:
                    return None, None  # a duplicate top-level "id" (J-12): routing is ambiguous
                token = head[i:end]
                if token[:1] in (b"{", b"["):
                    raise _Unsure
                state.request_id = _parse_id(token)
                state.found_id = True
            i = _skip_ws(head, end)
            first = False
            c = _at(head, i)
            if c == 0x2C:  # ,
                i += 1
                continue
            if c == 0x7D:  # }
                return state.finish(head, i + 1, complete, closed=True), None
            raise _Unsure
    except _End:
        if complete:
            return None, None  # the whole frame was read and the object never closed
        return state.finish(head, i, complete, closed=False), state


@attrs.define(slots=True)
class _State:
    request_id: RequestId | None = None
    found_id: bool = False
    id_offset: int = -1
    has_method: bool = False
    has_answer: bool = False

    def finish(self, head: bytes, i: int, complete: bool, *, closed: bool) -> HeadScan | None:
        request_id = self.request_id
        if request_id is None or not self.found_id or not is_valid_request_id(request_id):
            return None
        if closed:
            if not complete or _skip_ws(head, i) != len(head):
                return None  # something after the object: not one JSON value
            return HeadScan(request_id, self.has_method)
        if self.has_method:
            return HeadScan(request_id, True)
        if self.has_answer:
            return HeadScan(request_id, False)
        return None  # the kind is decided beyond the head
