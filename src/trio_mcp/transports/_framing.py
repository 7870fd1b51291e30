"""Newline-delimited JSON framing over a pair of byte streams.

One line is one JSON-RPC message (SI-02): UTF-8 JSON with no embedded newline,
terminated by ``\\n``. :class:`LineChannel` turns a send stream and a receive
stream (pipes, a socket, a subprocess's stdin/stdout) into a
:data:`trio_mcp.lowlevel.Transport`. Both stdio sides use it, and so can any custom
transport over a reliable byte stream (TR-04).

Reading is lenient where the spec allows: a ``\\r`` before the ``\\n`` is
dropped (CRLF peers), empty and whitespace-only lines are skipped, and a partial
line at end of input is discarded. A line longer than ``max_message_size`` is
never buffered whole nor joined: once it is over the limit, only its head (the
first ``min(max_message_size + 1, HEAD_SCAN_SIZE)`` bytes, 4 KiB at most) and
its tail (the last 4 KiB, kept as the rest is skipped) are kept and handed to the
session as an :class:`~trio_mcp.protocol._head.OversizeFrame`; the rest is
skipped up to the next newline, and the framing resumes there. If the head
names the id, the marker goes on at once (the caller fails without waiting for
the rest of the line); else when the line ends, with its tail, where an id
written last is found. The codec refuses the frame by size without parsing it,
and names its id when the bounded scan reads one
(:func:`~trio_mcp.protocol._head.scan_frame` says when): a request is answered
-32600 with its id, a response fails the call it answers, and the session goes
on either way. Memory stays bounded by the limit (what was read of the line
before it went over) plus 8 KiB; skipping the rest of a line costs no memory
however long it is.

Writing is strict: a frame containing a newline is a bug in the caller and raises
``ValueError`` before anything is written.

Spec: SI-02, SI-05, SI-06, TR-01, TR-04.
"""

from __future__ import annotations

import errno
import os

import attrs
import trio

from .._transport import Network
from ..protocol._codec import DEFAULT_MAX_MESSAGE_SIZE
from ..protocol._head import HEAD_SCAN_SIZE, TAIL_SCAN_SIZE, OversizeFrame, scan_frame

#: Bytes asked of the stream per read (a Linux pipe holds 64 KiB).
READ_SIZE = 1 << 16

_WHITESPACE = b" \t\r\x0b\x0c"
_WHITESPACE_BYTES = frozenset(_WHITESPACE)

# Streams whose descriptor we read and write ourselves (see _read/_write).
_FdStream: type | None = getattr(trio.lowlevel, "FdStream", None)


@attrs.frozen
class LineStatistics:
    """A frozen snapshot of a :class:`LineChannel`'s counters."""

    #: Lines read and handed on as frames.
    frames_in: int
    #: Frames written, one line each.
    frames_out: int
    #: Bytes read from the stream, everything included (newlines, skipped lines).
    bytes_in: int
    #: Bytes written, each frame's newline included.
    bytes_out: int
    #: Lines longer than the limit (each was dropped but for its head).
    oversize_lines: int
    #: Empty or whitespace-only lines skipped.
    blank_lines: int
    #: Bytes of a partial last line discarded at end of input.
    discarded_tail: int


class LineChannel(trio.abc.Channel[bytes]):
    """A :data:`trio_mcp.lowlevel.Transport` over newline-delimited JSON.

    Args:
        send_stream: where frames are written (``None``: receive only).
        receive_stream: where frames are read from.
        max_message_size: longest line accepted whole, in bytes (16 MiB by
            default). It bounds memory too: a line is buffered up to this size
            before it is framed or, once over it, dropped but for its 4 KiB head.

    ``send`` is not safe to call from two tasks at once (a session has one
    writer), nor is ``receive`` (one reader); ``aclose`` closes both streams
    and is idempotent.

    On a :class:`trio.lowlevel.FdStream` (pipes, a subprocess's stdio) the
    descriptor is read and written directly, syscall first and schedule point
    after, as Trio's sockets do: a frame goes out without first waiting a
    scheduler pass, and a reader that has to wait for input waits once. This is
    most of the latency of a stdio round trip.

    Cancellation:
        ``send``, ``receive`` and ``aclose`` are checkpoints. ``receive`` can be
        cancelled at any time without losing data: bytes read so far stay
        buffered. ``send`` cancelled part-way (only possible while the pipe is
        full) may leave a partial line on the wire, which breaks the framing;
        the session only cancels its writer when it is closing the transport
        anyway. ``receive_nowait`` never yields.
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
        self._send_fd = _FdStream is not None and type(send_stream) is _FdStream
        self._receive_fd = _FdStream is not None and type(receive_stream) is _FdStream
        # Unconsumed input is self._data[self._pos:]; it holds no newline
        # before self._scan. Earlier pieces of the current line, which hold
        # no newline, wait in self._partial (joined once the line ends, so a
        # long line is copied once, not once per read).
        self._data = b""
        self._pos = 0
        self._scan = 0
        self._partial: list[bytes] = []
        self._partial_len = 0
        self._skipping = False  # inside the rest of an oversize line
        # An oversize line whose head named no id: its head, tail and size so
        # far, held until the line ends (the id may be its last member).
        self._held_head: bytes | None = None
        self._held_tail = bytearray()
        self._held_size = 0
        self._eof = False
        self._closed = False
        self._frames_in = 0
        self._frames_out = 0
        self._bytes_in = 0
        self._bytes_out = 0
        self._oversize = 0
        self._blank = 0
        self._discarded_tail = 0
        # What send_nowait could not write of its line, for flush (or the next send).
        self._tail: memoryview | None = None

    @property
    def network(self) -> Network:
        """A pipe: stdio is what lines are framed over
        (:class:`~trio_mcp.lowlevel.NetworkTransport`)."""
        return Network("pipe")

    async def send(self, value: bytes) -> None:
        if self._closed or self.send_stream is None:
            raise trio.ClosedResourceError("the transport is closed")
        if b"\n" in value:
            raise ValueError("a stdio frame must not contain a newline (SI-02)")
        if self._tail is not None:
            await self.flush()  # the rest of the line send_nowait began comes first
        data = bytes(value) + b"\n"
        if self._send_fd:
            await self._write(data)
        else:
            await self.send_stream.send_all(data)
        self._frames_out += 1
        self._bytes_out += len(data)

    def send_nowait(self, value: bytes) -> None:
        """Write *value* as one line now, without yielding (the transport
        contract's fast path, used for the session's write-through).

        One non-blocking ``os.write``: if the pipe takes the whole line, done;
        if it takes part of it, the rest is kept in order and written by
        :meth:`flush` (or by the next :meth:`send`, first), and
        :meth:`flush_pending` says so. Raises ``trio.WouldBlock`` having
        written nothing when the pipe is full, when part of an earlier line is
        still pending, or when the stream is not a file descriptor we write
        ourselves.

        Cancellation: never yields, so it cannot be cancelled part-way.
        """
        stream = self.send_stream
        if self._closed or stream is None:
            raise trio.ClosedResourceError("the transport is closed")
        if not self._send_fd or self._tail is not None:
            raise trio.WouldBlock
        if b"\n" in value:
            raise ValueError("a stdio frame must not contain a newline (SI-02)")
        data = bytes(value) + b"\n"
        try:
            sent = os.write(stream.fileno(), data)  # type: ignore[attr-defined]
        except BlockingIOError:
            raise trio.WouldBlock from None
        except OSError as exc:
            raise _write_error(exc) from None
        if sent < len(data):
            self._tail = memoryview(data)[sent:]
        self._frames_out += 1
        self._bytes_out += len(data)

    def set_max_message_size(self, size: int) -> None:
        """Accept lines of up to *size* bytes (positive) from now on (the
        session makes its codec's bound this transport's)."""
        if size < 1:
            raise ValueError("max_message_size must be positive")
        self.max_message_size = size

    def flush_pending(self) -> bool:
        """Whether part of a line written by :meth:`send_nowait` still waits
        for :meth:`flush`."""
        return self._tail is not None

    async def flush(self) -> None:
        """Write what :meth:`send_nowait` left of its line (a checkpoint; may
        block while the pipe is full).

        Cancellation: as :meth:`send` (cancelled part-way, the framing is broken).
        """
        tail = self._tail
        if tail is None:
            await trio.lowlevel.checkpoint()
            return
        # Taken only once nothing can stop the write starting: a flush cancelled
        # before it wrote anything keeps the tail for the next one.
        await trio.lowlevel.checkpoint_if_cancelled()
        self._tail = None
        with tail:
            await self._write(tail)

    async def _write(self, data: bytes | memoryview) -> None:
        # FdStream.send_all yields before it writes; writing first puts the
        # frame on the wire a scheduler pass earlier (the peer starts on it
        # while we yield afterwards).
        stream = self.send_stream
        assert stream is not None
        await trio.lowlevel.checkpoint_if_cancelled()
        waited = False
        with memoryview(data) as view:
            sent = 0
            total = len(data)
            while sent < total:
                fd = stream.fileno()  # type: ignore[attr-defined]  # -1 once closed
                try:
                    sent += os.write(fd, view[sent:])
                except BlockingIOError:
                    waited = True
                    await trio.lowlevel.wait_writable(fd)
                except OSError as exc:
                    raise _write_error(exc) from exc
        if not waited:
            await trio.lowlevel.cancel_shielded_checkpoint()

    async def _read(self) -> bytes:
        # Read first, wait only if nothing is there (FdStream.receive_some
        # yields a scheduler pass first, then usually finds nothing and waits).
        if not self._receive_fd:
            chunk = await self.receive_stream.receive_some(READ_SIZE)
            return chunk if type(chunk) is bytes else bytes(chunk)
        stream = self.receive_stream
        await trio.lowlevel.checkpoint_if_cancelled()
        while True:
            fd = stream.fileno()  # type: ignore[attr-defined]  # -1 once closed
            try:
                chunk = os.read(fd, READ_SIZE)
            except BlockingIOError:
                if self._closed:
                    # Closed by a subclass that keeps the stream open (a
                    # spawned server's stdout, drained at its shutdown) and
                    # wakes a parked reader with notify_closing: a reader that
                    # was runnable then must not park after it.
                    raise trio.ClosedResourceError("the transport is closed") from None
                await trio.lowlevel.wait_readable(fd)
                # Waiting was the schedule point; what we read next is returned at once.
                try:
                    return os.read(stream.fileno(), READ_SIZE)  # type: ignore[attr-defined]
                except BlockingIOError:
                    continue  # a spurious wake-up
                except OSError as exc:
                    raise _read_error(exc) from None
            except OSError as exc:
                raise _read_error(exc) from None
            await trio.lowlevel.cancel_shielded_checkpoint()
            return chunk

    async def receive(self) -> bytes:
        if self._closed:
            raise trio.ClosedResourceError("the transport is closed")
        # Nothing unread (the reader's receive_nowait just found so): no frame
        # to look for, and _take_frame would only reset the empty buffer.
        frame = self._take_frame() if self._data else None
        if frame is not None:
            await trio.lowlevel.checkpoint()
            return frame
        while True:
            if self._eof:
                raise trio.EndOfChannel
            # _read is the checkpoint: it raises Cancelled before reading, and
            # a chunk it read is buffered before anything else can interrupt.
            chunk = await self._read()
            if not chunk:
                self._eof = True
                if not self._skipping and any(p.strip(_WHITESPACE) for p in self._partial):
                    self._discarded_tail += self._partial_len
                self._partial.clear()
                self._partial_len = 0
                raise trio.EndOfChannel
            self._bytes_in += len(chunk)
            self._data = chunk
            frame = self._take_frame()
            if frame is not None:
                return frame

    def receive_nowait(self) -> bytes:
        """A frame already read from the stream, else raise ``trio.WouldBlock``.

        Never reads and never yields: the session's reader drains the frames
        of one read this way before it waits in ``receive`` again.
        """
        if self._closed:
            raise trio.ClosedResourceError("the transport is closed")
        frame = self._take_frame() if self._data else None
        if frame is None:
            raise trio.WouldBlock
        return frame

    def _take_frame(self) -> bytes | None:
        """The next complete frame in what was read, or None if more input is needed.

        With nothing unread (``_data`` empty) it is always None: the callers
        skip the call then.
        """
        limit = self.max_message_size
        while True:
            data = self._data
            end = data.find(b"\n", self._scan)
            if end >= 0:
                start = self._pos
                self._pos = self._scan = end + 1
                if self._skipping:
                    # The rest of an oversize line: drop it, frame the next.
                    self._skipping = False
                    if self._held_head is not None:
                        # Its head held no id: the refusal waited for its tail.
                        self._keep_tail(data[start:end])
                        return self._held_frame()
                    continue
                if self._partial_len + end - start > limit:
                    # Over the limit: only its head and tail go on (never joined whole).
                    self._partial.append(data[start:end])
                    marker = self._oversize_frame(self._partial_len + end - start, ended=True)
                    assert marker is not None
                    return marker
                if self._partial:
                    pieces = self._partial
                    pieces.append(data[start:end])
                    frame = b"".join(pieces)
                    pieces.clear()
                    self._partial_len = 0
                else:
                    frame = data[start:end]
                if frame.endswith(b"\r"):
                    frame = frame[:-1]
                if not frame or (frame[0] in _WHITESPACE_BYTES and not frame.strip(_WHITESPACE)):
                    self._blank += 1
                    continue
                self._frames_in += 1
                return frame
            # No newline in what is left: keep it as part of the current line.
            if self._pos < len(data):
                rest = data[self._pos :] if self._pos else data
                if not self._skipping:
                    self._partial.append(rest)
                    self._partial_len += len(rest)
                elif self._held_head is not None:
                    self._keep_tail(rest)
            self._data = b""
            self._pos = self._scan = 0
            if not self._skipping and self._partial_len > limit:
                # Skip the rest of the line as it arrives; hand over the head now
                # if it names the id (the codec refuses the frame by size), else
                # once the line ends, with its tail.
                self._skipping = True
                return self._oversize_frame(self._partial_len, ended=False)
            return None

    def _oversize_frame(self, seen: int, *, ended: bool) -> OversizeFrame | None:
        """The head and tail of the line in ``_partial`` (*seen* bytes so far, over
        the limit), which is dropped: the marker the codec refuses by size. Before
        the line has *ended*, None if its head names no id (the tail is kept as
        the rest of the line is skipped, and the marker waits for its end)."""
        limit = self.max_message_size
        keep = min(limit + 1, HEAD_SCAN_SIZE)
        head = bytearray()
        for piece in self._partial:
            head += piece[: keep - len(head)]
            if len(head) >= keep:
                break
        tail = bytearray()
        for piece in reversed(self._partial):
            tail[:0] = piece[-(TAIL_SCAN_SIZE - len(tail)) :]
            if len(tail) >= TAIL_SCAN_SIZE:
                break
        self._partial.clear()
        self._partial_len = 0
        self._oversize += 1
        if not ended and scan_frame(head, b"", seen + 1) is None:
            self._held_head = bytes(head)
            self._held_tail = tail
            self._held_size = seen
            return None
        self._frames_in += 1
        return OversizeFrame(bytes(head), seen, limit, bytes(tail) if ended else b"")

    def _keep_tail(self, piece: bytes) -> None:
        """Skipping a held oversize line: count *piece* and keep the line's last bytes."""
        self._held_size += len(piece)
        tail = self._held_tail
        if len(piece) >= TAIL_SCAN_SIZE:
            tail[:] = piece[-TAIL_SCAN_SIZE:]
        else:
            tail += piece
            del tail[: max(0, len(tail) - TAIL_SCAN_SIZE)]

    def _held_frame(self) -> OversizeFrame:
        head, self._held_head = self._held_head, None
        assert head is not None
        tail, self._held_tail = bytes(self._held_tail), bytearray()
        self._frames_in += 1
        return OversizeFrame(head, self._held_size, self.max_message_size, tail)

    async def aclose(self) -> None:
        if self._closed:
            await trio.lowlevel.checkpoint()
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


def _write_error(exc: OSError) -> Exception:
    if exc.errno == errno.EBADF:
        return trio.ClosedResourceError("file was already closed")
    return trio.BrokenResourceError(f"write failed: {exc}")


def _read_error(exc: OSError) -> Exception:
    if exc.errno == errno.EBADF:
        return trio.ClosedResourceError("file was already closed")
    return trio.BrokenResourceError(f"read failed: {exc}")
