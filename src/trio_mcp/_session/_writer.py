"""The session's writer: one writer at a time, with write-through.

Theory of operation
-------------------
Every frame the session sends goes through one :class:`Writer`. Messages wait
on a bounded memory channel, which is atomic under cancellation (a message is
queued or not), and a writer task writes them, one at a time, in order.

**Write-through** (docs/explanation/architecture.md, "One writer, with
write-through"). While the writer task is parked on an empty queue (or not
started), the task that made a message encodes it and writes it itself with
the transport's ``send_nowait``, which never yields: cancellation cannot tear
it, and nothing queued is overtaken. What the transport cannot take at once (a
full buffer, the rest of a line a pipe took in part) goes to the writer task,
which is then busy, so later messages queue behind it. A frame is never torn
and order is kept either way, and an uncontended round trip skips a task
hand-off on each side.

**Lazy start.** With write-through the writer task, and its channel, are made
only when a frame first has to wait for them: a session whose writes never
block (an in-memory pair, a stateless HTTP request) never spawns it. A
transport without ``send_nowait`` has its writer from the start.

**Close.** :meth:`Writer.close` closes the queue (nothing is written through
after it); the writer task writes what is queued and ends, and
:meth:`Writer.wait_done` waits for that.

The writer knows its session only through what it is built with: the
transport, the connection (to encode), the nursery (for its task) and three
callables of the session's (the transport was lost; a message could not be
encoded; the error that says the session is closed).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import trio

from .._errors import SessionClosed
from .._transport import Transport, offers_flushing, offers_nowait_send
from ..protocol import Connection, FrameDirection, LocalProtocolError, Message

logger = logging.getLogger("trio_mcp.session")

#: Queued by a sender whose write-through the transport took in part: the
#: writer writes the rest (``transport.flush()``) before any later frame.
_FLUSH: Any = object()


class Writer:
    """Writes a session's outgoing messages, in order. Not constructed directly.

    Args:
        transport: where the frames go.
        protocol: the session's connection, which encodes each message.
        nursery: where the writer task runs, once it is needed.
        outgoing_buffer: the bound of the queue.
        on_lost: called with a reason and the error when writing fails (the
            transport is broken or closed).
        on_unwritable: called with a message that could not be encoded and the
            error (it was dropped).
        closed_error: makes the error a sender gets once the queue is closed.

    Cancellation: the write-through never yields. A sender blocked by a full
    queue (:meth:`queue`, :meth:`wait_for_room`) queued nothing if cancelled.
    The writer task is cancelled with the session's nursery; cancelled while
    idle, it leaves the write-through open (until :meth:`close`), so a frame
    the transport takes at once is still written.
    """

    __slots__ = (
        "_closed",
        "_closed_error",
        "_done",
        "_finished",
        "_flush_pending",
        "_idle",
        "_nursery",
        "_on_lost",
        "_on_unwritable",
        "_protocol",
        "_receive_channel",
        "_send_channel",
        "_send_nowait",
        "_started",
        "_transport",
        "frames_out",
        "queue_size",
        "written_through",
    )

    def __init__(
        self,
        transport: Transport,
        protocol: Connection,
        nursery: trio.Nursery,
        outgoing_buffer: int,
        *,
        on_lost: Callable[[str, BaseException], None],
        on_unwritable: Callable[[Message, LocalProtocolError], None],
        closed_error: Callable[[], SessionClosed],
    ) -> None:
        self._transport = transport
        self._protocol = protocol
        self._nursery = nursery
        #: The bound of the queue.
        self.queue_size = outgoing_buffer
        self._on_lost = on_lost
        self._on_unwritable = on_unwritable
        self._closed_error = closed_error
        # The transport contract's optional parts (src/trio_mcp/_transport.py),
        # bound once: the write-through calls them on every frame.
        self._send_nowait: Callable[[bytes], None] | None = (
            transport.send_nowait if offers_nowait_send(transport) else None
        )
        self._flush_pending: Callable[[], bool] | None = (
            transport.flush_pending if offers_flushing(transport) else None
        )
        # The queue: made with the writer task (see _start), so an idle
        # session that always wrote through holds no channel.
        self._send_channel: trio.MemorySendChannel[Message | bytes] | None = None
        self._receive_channel: trio.MemoryReceiveChannel[Message | bytes] | None = None
        # True only while nothing is queued and the writer task is not writing
        # (parked on the empty queue, or not started), the queue is open and a
        # sender can write through: then it writes its frame itself, and order
        # is kept.
        self._idle = self._send_nowait is not None
        self._started = False
        self._closed = False
        self._finished = False
        # Made only while someone waits for the writer task to finish.
        self._done: trio.Event | None = None
        #: Frames written, by the writer task or through.
        self.frames_out = 0
        #: Of those, the frames their sender wrote itself (write-through).
        self.written_through = 0

    @property
    def queue_used(self) -> int:
        """Messages waiting in the queue now."""
        channel = self._send_channel
        return 0 if channel is None else channel.statistics().current_buffer_used

    def start(self) -> None:
        """Start the writer task now, if the transport cannot write through
        (every frame goes by the writer task then)."""
        if self._send_nowait is None:
            self._start()

    async def queue(self, message: Message) -> None:
        """Write *message* now, or queue it for the writer task.

        Not a checkpoint when there is room (a yield here would cost a
        scheduler round trip per message); blocks while the queue is full.

        Raises:
            SessionClosed: the queue is closed (the session is closing), or
                the writer task is gone (the transport failed).

        Cancellation: a cancelled wait for room queued nothing.
        """
        try:
            self.queue_nowait(message)
        except trio.WouldBlock:
            try:
                await self.wait_for_room(message)
            except (trio.ClosedResourceError, trio.BrokenResourceError):
                raise self._closed_error() from None
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            raise self._closed_error() from None

    async def queue_reply(self, message: Message) -> None:
        """Queue a reply owed to the peer; drop it if the queue is closed
        already (there is nobody left to write it). Replies come from the
        reader (ping, refusals) and from handlers that may finish late,
        neither of which may end the session with :class:`SessionClosed`.

        Cancellation: as :meth:`queue`.
        """
        try:
            await self.queue(message)
        except SessionClosed:
            logger.debug("dropped a reply queued after the session closed: %r", message)

    async def wait_for_room(self, message: Message) -> None:
        """Queue *message* for the writer task, waiting while the queue is full
        (after :meth:`queue_nowait` raised ``WouldBlock``: the queue and its
        writer task exist).

        Cancellation: a cancelled wait queued nothing.
        """
        channel = self._send_channel
        assert channel is not None  # only a queue that exists can be full
        await channel.send(message)

    def queue_nowait(self, message: Message) -> None:
        """Write *message* now, or queue it for the writer task; never yields.

        While the writer task is idle, the caller encodes the frame and writes
        it itself with the transport's ``send_nowait`` (write-through). A
        frame the transport cannot take at once goes to the writer task as
        encoded bytes, and a partial write (the pipe took only part of the
        line) hands it a flush marker: either way the writer task is busy
        from then on, so every later frame queues behind the rest of this one.

        Raises:
            trio.WouldBlock: the queue is full (nothing was queued or written).
            trio.ClosedResourceError: the queue is closed.
        """
        if not self._idle:
            self._hand_over(message)
            return
        send_nowait = self._send_nowait
        assert send_nowait is not None  # the writer is never idle without one
        data = self._encode(message)
        if data is None:
            return
        self._commit_frame(data)
        try:
            send_nowait(data)
        except trio.WouldBlock:
            # Nothing is queued (the writer task is parked or not started):
            # this cannot block.
            self._idle = False
            self._hand_over(data)
            return
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            self._idle = False
            self._on_lost(f"transport failed while writing: {exc!r}", exc)
            return
        self.written_through += 1
        flush_pending = self._flush_pending
        if flush_pending is not None and flush_pending():
            self._idle = False
            self._hand_over(_FLUSH)

    def close(self) -> None:
        """Close the queue: nothing is written through or queued after this;
        the writer task writes what is queued, then ends."""
        self._closed = True
        self._idle = False
        if self._send_channel is not None:
            self._send_channel.close()

    async def wait_done(self) -> None:
        """Block until the writer task has ended; at once (a checkpoint) if it
        never started.

        Cancellation: a plain wait; nothing changes if it is cancelled.
        """
        if self._finished or not self._started:
            await trio.lowlevel.checkpoint()
            return
        if self._done is None:
            self._done = trio.Event()
        await self._done.wait()

    # ------------------------------------------------------------ internals

    def _hand_over(self, item: Message | bytes) -> None:
        """Queue *item* for the writer task, making the queue and starting the
        task first if nothing was ever queued.

        Raises ``trio.WouldBlock`` (full) or ``ClosedResourceError`` (the queue
        is closed) having queued nothing; a closed writer never starts its task.
        """
        channel = self._send_channel
        if channel is None:
            if self._closed:
                raise trio.ClosedResourceError("the outgoing queue is closed")
            channel = self._start()
        channel.send_nowait(item)

    def _start(self) -> trio.MemorySendChannel[Message | bytes]:
        """Make the queue and start the writer task (once)."""
        send, self._receive_channel = trio.open_memory_channel[Message | bytes](self.queue_size)
        self._send_channel = send
        self._started = True
        self._nursery.start_soon(self._run, name="trio_mcp writer")
        return send

    def _commit_frame(self, data: bytes) -> None:
        """Count and observe an outgoing frame that encode() has committed.

        Observed before the write: a peer cancel read while the write waits
        can no longer stop the frame, so observers see it in that order.
        """
        self.frames_out += 1
        protocol = self._protocol
        if protocol.observing:
            protocol.observer.on_frame(FrameDirection.OUT, data, trio.current_time())

    def _encode(self, message: Message) -> bytes | None:
        """``protocol.encode``, which must never end the writer.

        Everything the session sends is serialized when it is made, so its
        maker gets a :class:`LocalProtocolError` for what is not JSON. Should a
        frame still fail here, it is dropped and handed to ``on_unwritable``
        (H-07).
        """
        try:
            return self._protocol.encode(message)
        except LocalProtocolError as exc:
            logger.error("dropped a frame that cannot be written: %s", exc)
            self._on_unwritable(message, exc)
            return None

    async def _run(self) -> None:
        """The writer task: write what is queued, in order, until the queue
        is closed and drained or the transport fails."""
        channel = self._receive_channel
        assert channel is not None  # made before the task starts
        transport = self._transport
        send_nowait = self._send_nowait
        flushing = transport if offers_flushing(transport) else None
        item: Any
        data: bytes | None = None
        parked = False
        try:
            async with channel:
                while True:
                    try:
                        item = channel.receive_nowait()
                    except trio.WouldBlock:
                        # Parked on an empty queue: senders may write through
                        # (see queue_nowait) until one hands us something.
                        self._idle = send_nowait is not None and not self._closed
                        parked = True
                        item = await channel.receive()
                        parked = False
                        self._idle = False
                    # Drain what is already queued without a scheduler round
                    # trip per message.
                    while item is not None:
                        if item is _FLUSH:
                            # The rest of a frame a sender wrote in part.
                            assert flushing is not None  # only it takes part of a frame
                            await flushing.flush()
                        else:
                            if type(item) is bytes:
                                # Encoded, counted and observed by a sender whose
                                # write-through found the transport full.
                                data = item
                            else:
                                data = self._encode(item)
                                if data is not None:
                                    self._commit_frame(data)
                            if data is not None:
                                if send_nowait is None:
                                    await transport.send(data)
                                else:
                                    try:
                                        send_nowait(data)
                                    except trio.WouldBlock:
                                        await transport.send(data)
                                    else:
                                        # The pipe took part of the line: the
                                        # rest goes now, not with the next
                                        # frame (there may be none: the peer
                                        # would wait for it forever).
                                        if flushing is not None and flushing.flush_pending():
                                            await flushing.flush()
                        try:
                            item = channel.receive_nowait()
                        except trio.WouldBlock:
                            item = None
                    # Drop the last frame before parking: an idle session
                    # would keep it alive until the next message, and a frame
                    # from orjson holds a block far larger than its length.
                    data = None
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            self._on_lost(f"transport failed while writing: {exc!r}", exc)
        except trio.EndOfChannel:
            pass
        finally:
            # Cancelled while parked (a scope enclosing the session: the
            # owner's cancel), nothing is queued or half-written: senders
            # still write through, as before the task was made, so what the
            # shutdown still writes (a listen's final result) goes out. A
            # frame the transport cannot take at once is then dropped.
            self._idle = self._idle and parked
            self._finished = True
            if self._done is not None:
                self._done.set()
