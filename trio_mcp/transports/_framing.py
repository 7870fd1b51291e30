"""Newline-delimited JSON framing over a pair of byte streams.

One line is one JSON-RPC message (SI-02): UTF-8 JSON with no embedded newline,
terminated by ``\\n``. :class:`LineChannel` turns a send stream and a receive
stream (pipes, a socket, a subprocess's stdin/stdout) into a
:data:`trio_mcp.Transport`. Both stdio sides use it, and so can any custom
transport over a reliable byte stream (TR-04).

Reading is lenient where the spec allows: a ``\\r`` before the ``\\n`` is
dropped (CRLF peers), empty and whitespace-only lines are skipped, and a partial
line at end of input is discarded. A line longer than ``max_message_size`` is
never buffered whole: the first ``max_message_size + 1`` bytes are kept and the
rest is skipped up to the next newline, and that over-limit prefix is handed to
the session, whose codec refuses it by size (an error reply with id ``null``),
so the session goes on (memory stays bounded by the limit).

Writing is strict: a frame containing a newline is a bug in the caller and raises
``ValueError`` before anything is written.

Spec: SI-02, SI-05, SI-06, TR-01, TR-04.
"""

from __future__ import annotations

import attrs
import trio

from ..protocol._codec import DEFAULT_MAX_MESSAGE_SIZE

#: Bytes asked of the stream per read (a Linux pipe holds 64 KiB).
READ_SIZE = 1 << 16

_WHITESPACE = b" \t\r\x0b\x0c"


@attrs.frozen
class LineStatistics:
    """A frozen snapshot of a :class:`LineChannel`'s counters."""

    frames_in: int
    frames_out: int
    bytes_in: int
    bytes_out: int
    #: Lines longer than the limit (each was cut to the limit plus one byte).
    oversize_lines: int
    #: Empty or whitespace-only lines skipped.
    blank_lines: int
    #: Bytes of a partial last line discarded at end of input.
    discarded_tail: int


class LineChannel(trio.abc.Channel[bytes]):
    """A :data:`trio_mcp.Transport` over newline-delimited JSON.

    Args:
        send_stream: where frames are written (``None``: receive only).
        receive_stream: where frames are read from.
        max_message_size: longest line accepted whole, in bytes.

    ``send`` is not safe to call from two tasks at once (a session has one
    writer); ``aclose`` closes both streams and is idempotent.

    Cancellation:
        ``receive`` can be cancelled at any time without losing data: bytes read
        so far stay buffered. ``send`` cancelled part-way may leave a partial
        line on the wire, which breaks the framing; the session only cancels its
        writer when it is closing the transport anyway.
    """

    def __init__(
        self,
        send_stream: trio.abc.SendStream | None,
        receive_stream: trio.abc.ReceiveStream,
        *,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
    ) -> None:
        if max_message_size < 1:
            raise ValueError("max_message_size must be positive")
        self.send_stream = send_stream
        self.receive_stream = receive_stream
        self.max_message_size = max_message_size
        self._buffer = bytearray()
        # Where to resume looking for a newline (bytes before it hold none).
        self._scan = 0
        self._skipping = False  # inside the rest of an oversize line
        self._eof = False
        self._closed = False
        self._frames_in = 0
        self._frames_out = 0
        self._bytes_in = 0
        self._bytes_out = 0
        self._oversize = 0
        self._blank = 0
        self._discarded_tail = 0

    async def send(self, value: bytes) -> None:
        if self._closed or self.send_stream is None:
            raise trio.ClosedResourceError("the transport is closed")
        if b"\n" in value:
            raise ValueError("a stdio frame must not contain a newline (SI-02)")
        data = bytes(value) + b"\n"
        await self.send_stream.send_all(data)
        self._frames_out += 1
        self._bytes_out += len(data)

    async def receive(self) -> bytes:
        if self._closed:
            raise trio.ClosedResourceError("the transport is closed")
        buffer = self._buffer
        while True:
            end = buffer.find(b"\n", self._scan)
            if end >= 0:
                if self._skipping:
                    # The rest of an oversize line: drop it, frame the next.
                    self._skipping = False
                    del buffer[: end + 1]
                    self._scan = 0
                    continue
                if end > self.max_message_size:
                    self._oversize += 1
                    end_cut = self.max_message_size + 1
                else:
                    end_cut = end
                frame = bytes(buffer[:end_cut])
                del buffer[: end + 1]
                self._scan = 0
                if frame.endswith(b"\r"):
                    frame = frame[:-1]
                if not frame.strip(_WHITESPACE):
                    self._blank += 1
                    continue
                self._frames_in += 1
                return frame
            if self._skipping:
                buffer.clear()
                self._scan = 0
            elif len(buffer) > self.max_message_size:
                # Hand over the over-limit prefix (the codec refuses it by
                # size) and skip the rest of the line as it arrives.
                frame = bytes(buffer[: self.max_message_size + 1])
                buffer.clear()
                self._scan = 0
                self._skipping = True
                self._oversize += 1
                self._frames_in += 1
                return frame
            else:
                self._scan = len(buffer)
            if self._eof:
                raise trio.EndOfChannel
            chunk = await self.receive_stream.receive_some(READ_SIZE)
            if not chunk:
                self._eof = True
                if buffer.strip(_WHITESPACE) and not self._skipping:
                    self._discarded_tail += len(buffer)
                buffer.clear()
                self._scan = 0
                raise trio.EndOfChannel
            self._bytes_in += len(chunk)
            buffer += chunk

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            if self.send_stream is not None:
                await self.send_stream.aclose()
        finally:
            await self.receive_stream.aclose()

    def statistics(self) -> LineStatistics:
        """A frozen snapshot of this channel's counters."""
        return LineStatistics(
            frames_in=self._frames_in,
            frames_out=self._frames_out,
            bytes_in=self._bytes_in,
            bytes_out=self._bytes_out,
            oversize_lines=self._oversize,
            blank_lines=self._blank,
            discarded_tail=self._discarded_tail,
        )
