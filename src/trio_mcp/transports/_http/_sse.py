"""Server-Sent Events, sans I/O: a formatter and an incremental parser.

The wire format is the ``text/event-stream`` grammar of the WHATWG HTML
standard (section 9.2). The parser is fed arbitrary chunks of bytes (a chunk may
end in the middle of a line, of a CRLF pair, or of a UTF-8 sequence) and returns
complete events; it keeps at most ``max_event_size`` bytes buffered (plus 8 KiB),
so a peer that never ends an event cannot make it grow without bound: an event
over it is dispatched as the head and tail of its data (``SSEEvent.oversize``),
refused by size with the id read from them.

What the MCP transports need from it: the ``id`` of every event (resumability,
``Last-Event-ID``), the ``retry`` field (reconnection delay), and events with
empty data, which MCP servers send as "priming" events (HT-10) and which the
WHATWG dispatch rule would drop; we keep them (``SSEEvent.data == ""``) because
a client must still learn their id.

Spec: HT-09, HT-10, HT-12, HT-24, SS-03, SS-05.
"""

from __future__ import annotations

import attrs

from ...protocol._codec import DEFAULT_MAX_MESSAGE_SIZE
from ...protocol._head import HEAD_SCAN_SIZE, TAIL_SCAN_SIZE, OversizeFrame

#: Largest event the parser buffers (data of all its lines), in bytes: one
#: message at the default frame bound (16 MiB), plus room for the event's fields.
DEFAULT_MAX_EVENT_SIZE = DEFAULT_MAX_MESSAGE_SIZE + 64 * 1024


@attrs.define(slots=True)
class _Oversize:
    """The data of an event over the bound, as far as it is kept: its ends."""

    head: bytearray = attrs.Factory(bytearray)
    tail: bytearray = attrs.Factory(bytearray)
    size: int = 0

    def add(self, piece: bytes) -> None:
        self.size += len(piece)
        if len(self.head) < HEAD_SCAN_SIZE:
            self.head += piece[: HEAD_SCAN_SIZE - len(self.head)]
        self.tail += piece[-TAIL_SCAN_SIZE:]
        del self.tail[: max(0, len(self.tail) - TAIL_SCAN_SIZE)]


@attrs.frozen(slots=True)
class SSEEvent:
    """One dispatched event.

    ``id`` is the stream's last event id after this event (the WHATWG "last
    event ID buffer"), or None if no ``id`` field was seen yet; ``id_set`` says
    whether this very event carried an ``id`` field; ``retry`` is the
    reconnection time in milliseconds if this event carried a valid one.
    """

    data: str
    event: str = "message"
    id: str | None = None
    retry: int | None = None
    id_set: bool = False
    #: The data was over the parser's bound: only its head and tail, as the
    #: marker the codec refuses by size (``data`` is then empty).
    oversize: OversizeFrame | None = None


def format_event(
    data: str | bytes | None = None,
    *,
    event: str | None = None,
    id: str | None = None,
    retry: int | None = None,
) -> bytes:
    """One SSE event as bytes (``None`` data writes no ``data`` line).

    Multi-line data becomes one ``data:`` line per line, so any text round-trips.
    Raises ValueError on an ``event`` or ``id`` containing a line break (or, for
    ``id``, NUL, which the parser must ignore), which would corrupt the stream.
    """
    parts: list[bytes] = []
    if id is not None:
        if any(c in id for c in "\r\n\0"):
            raise ValueError("SSE id must not contain CR, LF or NUL")
        parts.append(b"id: " + id.encode() + b"\n")
    if event is not None:
        if "\r" in event or "\n" in event:
            raise ValueError("SSE event name must not contain CR or LF")
        parts.append(b"event: " + event.encode() + b"\n")
    if retry is not None:
        if retry < 0:
            raise ValueError("SSE retry must be a non-negative integer")
        parts.append(b"retry: " + str(int(retry)).encode() + b"\n")
    if data is not None:
        raw = data.encode() if isinstance(data, str) else bytes(data)
        if b"\r" in raw or b"\n" in raw:
            lines = raw.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
        else:
            lines = [raw]
        for line in lines:
            parts.append(b"data: " + line + b"\n")
    parts.append(b"\n")
    return b"".join(parts)


def format_comment(text: str = "") -> bytes:
    """A comment line (ignored by parsers; used as a keep-alive)."""
    if "\r" in text or "\n" in text:
        raise ValueError("SSE comment must not contain CR or LF")
    return b":" + text.encode() + b"\n\n"


class SSEParser:
    """Incremental ``text/event-stream`` parser.

    Usage::

        parser = SSEParser()
        for chunk in chunks:
            for event in parser.feed(chunk):
                ...

    Line ends may be CRLF, LF or CR (also split across chunks); a leading UTF-8
    BOM is skipped; comment lines and unknown fields are ignored; invalid UTF-8
    is replaced (U+FFFD), as the standard says.

    An event whose data is over ``max_event_size`` bytes is never buffered whole:
    once over, only the first :data:`~trio_mcp.protocol._head.HEAD_SCAN_SIZE`
    and the last :data:`~trio_mcp.protocol._head.TAIL_SCAN_SIZE` bytes of its
    data are kept, the rest of the event is skipped as it arrives, and the event
    is dispatched with empty ``data`` and ``oversize`` set: an
    :class:`~trio_mcp.protocol._head.OversizeFrame` the codec refuses by size,
    naming the id it reads from that head and tail. Any other line longer than
    the bound (a comment, an ``id``) is skipped. Memory stays at the bound plus
    8 KiB however long the event or line.
    """

    def __init__(self, *, max_event_size: int = DEFAULT_MAX_EVENT_SIZE) -> None:
        self.max_event_size = max_event_size
        self._buffer = bytearray()
        self._first = True
        self._skip_lf = False
        self._data: list[str] = []
        self._data_size = 0
        self._event = ""
        self._id_set = False
        self._retry: int | None = None
        # The current event's data once over the bound: head, tail, size.
        self._over: _Oversize | None = None
        # Inside a line over the bound (its start was consumed); a data line's
        # rest goes to self._over.
        self._skip_line = False
        self._skip_data = False
        #: The last event id seen on the stream (persists across events).
        self.last_event_id: str | None = None
        #: The last valid ``retry`` value seen on the stream, in milliseconds.
        self.retry: int | None = None

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Consume *chunk*; return the events it completed (possibly none)."""
        buf = self._buffer
        if self._skip_lf and chunk:
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
            self._skip_lf = False
        buf += chunk
        if self._first:
            if len(buf) < 3 and b"\xef\xbb\xbf".startswith(bytes(buf)):
                return []
            if buf[:3] == b"\xef\xbb\xbf":
                del buf[:3]
            self._first = False
        events: list[SSEEvent] = []
        start = 0
        length = len(buf)
        while start < length:
            cr = buf.find(b"\r", start)
            lf = buf.find(b"\n", start)
            if cr == -1 and lf == -1:
                break
            if cr == -1 or (lf != -1 and lf < cr):
                end, nxt = lf, lf + 1
            else:
                end = cr
                if cr + 1 < length:
                    nxt = cr + 2 if buf[cr + 1] == 0x0A else cr + 1
                else:
                    # A CR at the end of the chunk: a following LF belongs to it.
                    nxt = cr + 1
                    self._skip_lf = True
            line = bytes(buf[start:end])
            start = nxt
            if self._skip_line:
                # The end of a line over the bound.
                self._skip_line = False
                if self._skip_data:
                    self._add_over(line)
                continue
            event = self._line(line)
            if event is not None:
                events.append(event)
        del buf[:start]
        if self._skip_line:
            if self._skip_data:
                self._add_over(bytes(buf))
            buf.clear()
        elif len(buf) + self._data_size > self.max_event_size:
            self._start_long_line()
        return events

    def _start_long_line(self) -> None:
        """The unfinished line in the buffer is over the bound: skip it, keeping
        the head and tail of its value if it is a data line."""
        buf = self._buffer
        name, sep, value = bytes(buf).partition(b":")
        self._skip_line = True
        self._skip_data = name == b"data" and bool(sep)
        if self._skip_data:
            if value[:1] == b" ":
                value = value[1:]
            self._begin_over()
            self._add_over(value, new_line=True)
        buf.clear()

    def _begin_over(self) -> None:
        """The current event's data goes over the bound: keep only its ends."""
        if self._over is not None:
            return
        self._over = _Oversize()
        self._data_size = 0  # what is buffered from now on is one line at most
        if self._data:
            self._over.add("\n".join(self._data).encode())
        self._data.clear()

    def _add_over(self, piece: bytes, *, new_line: bool = False) -> None:
        over = self._over
        assert over is not None
        if new_line and over.size:
            over.add(b"\n")  # data lines are joined by a line feed
        over.add(piece)

    def _line(self, line: bytes) -> SSEEvent | None:
        if not line:
            return self._dispatch()
        if line[:1] == b":":
            return None
        name, sep, value = line.partition(b":")
        if sep and value[:1] == b" ":
            value = value[1:]
        field = name.decode("utf-8", "replace")
        if field == "data":
            if self._over is not None:
                self._add_over(value, new_line=True)
                return None
            self._data_size += len(value) + (1 if self._data else 0)
            self._data.append(value.decode("utf-8", "replace"))
            if self._data_size > self.max_event_size:
                self._begin_over()
            return None
        text = value.decode("utf-8", "replace")
        if field == "event":
            self._event = text
        elif field == "id":
            if "\0" not in text:
                self.last_event_id = text
                self._id_set = True
        elif field == "retry" and text and text.isascii() and text.isdigit():
            self._retry = int(text)
            self.retry = self._retry
        return None

    def _dispatch(self) -> SSEEvent | None:
        data, self._data = self._data, []
        self._data_size = 0
        over, self._over = self._over, None
        event_name, self._event = self._event, ""
        id_set, self._id_set = self._id_set, False
        retry, self._retry = self._retry, None
        oversize = None
        if over is not None:
            limit = self.max_event_size
            oversize = OversizeFrame(bytes(over.head), over.size, limit, bytes(over.tail))
        elif not data and not id_set and retry is None:
            # Nothing but blank lines (or only an event name): nothing to report.
            return None
        return SSEEvent(
            data="\n".join(data),
            event=event_name or "message",
            id=self.last_event_id,
            retry=retry,
            id_set=id_set,
            oversize=oversize,
        )
