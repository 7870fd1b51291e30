"""Opaque cursors for the paginated list methods.

A cursor is ``base64url("<list>:<offset>")``: the server decides the page size
(PA-02), the client treats the cursor as opaque (PA-05), and a cursor that does
not decode, names another list or points past the end is -32602 (PA-03, PA-06).
Cursors are per list, so a ``tools/list`` cursor is refused by ``prompts/list``.

Spec: PA-01, PA-03, PA-06.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from typing import TypeVar

from .._errors import RPCError
from ..protocol import ErrorCode

T = TypeVar("T")


def encode_cursor(kind: str, offset: int) -> str:
    """The cursor for the page of *kind* starting at *offset*."""
    return base64.urlsafe_b64encode(f"{kind}:{offset}".encode()).decode("ascii")


def decode_cursor(kind: str, cursor: str) -> int:
    """The offset a cursor of *kind* points at.

    Raises:
        RPCError: -32602 for a cursor we did not make for this list.
    """
    try:
        raw = base64.b64decode(cursor.encode("ascii"), altchars=b"-_", validate=True)
        text = raw.decode("ascii")
        prefix, _, number = text.partition(":")
        if prefix != kind or not number.isdigit():
            raise ValueError(cursor)
        return int(number)
    except (ValueError, UnicodeError, binascii.Error):
        raise RPCError(int(ErrorCode.INVALID_PARAMS), f"Invalid cursor: {cursor!r}") from None


def paginate(
    kind: str, items: Sequence[T], cursor: str | None, page_size: int | None
) -> tuple[list[T], str | None]:
    """One page of *items* and the next cursor (None at the end).

    Raises:
        RPCError: -32602 for an invalid cursor, or one past the end of the list.
    """
    offset = 0 if cursor is None else decode_cursor(kind, cursor)
    if offset > len(items) or (cursor is not None and offset == 0):
        raise RPCError(int(ErrorCode.INVALID_PARAMS), f"Invalid cursor: {cursor!r}")
    if page_size is None:
        return list(items[offset:]), None
    end = offset + page_size
    page = list(items[offset:end])
    return page, (encode_cursor(kind, end) if end < len(items) else None)
