"""A raw frame exchange with the server under test, every frame recorded.

The checker must send frames no well-behaved client sends (malformed JSON, a
``null`` id, a duplicate id), so it talks bytes, not through the
:class:`~trio_mcp.Client`. Well-formed messages are still built and
serialised by trio_mcp's protocol core (:func:`trio_mcp.protocol.encode`), and
every frame received is judged by its codec (:func:`trio_mcp.protocol.decode`):
a frame that is not one JSON-RPC message is kept in :attr:`Wire.junk`.

:class:`Wire` is the transport-neutral part (the inbox, bounded waits, the
record); :mod:`._stdio` and :mod:`._http` provide the two transports.

Cancellation: every wait is bounded by its ``within`` and returns ``None``
when it runs out; cancelling a wait loses nothing (frames stay in the inbox).

Spec: SI-02, SI-05, BP-01.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import orjson
import trio

from ..protocol import FrameError, Notification, Request, RequestId, decode, encode
from ._model import FrameRecord

#: How much of one frame the record keeps (a 1 MiB argument is not kept
#: whole; the terminal report shortens further).
RECORD_CHARS = 4000

#: Ids the checker uses: unique across the whole run, so that a late answer
#: to one check's request can never be taken for another's.
_ids = itertools.count(1)

Predicate = Callable[[dict[str, Any]], bool]


def new_id() -> int:
    """A request id never used before in this process."""
    return next(_ids)


def shorten(text: str, limit: int = RECORD_CHARS) -> str:
    """*text* cut to *limit* characters, saying how long it was."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text)} chars)"


def is_response(message: dict[str, Any]) -> bool:
    """A response or error response (no method, has an id key)."""
    return "method" not in message and "id" in message


def is_response_to(request_id: object) -> Predicate:
    return lambda m: (
        is_response(m) and m.get("id") == request_id and type(m.get("id")) is type(request_id)
    )


def is_progress_for(token: object) -> Predicate:
    return lambda m: (
        m.get("method") == "notifications/progress"
        and (m.get("params") or {}).get("progressToken") == token
    )


class Wire:
    """One connection to the server under test, transport-neutral."""

    #: "stdio" or "http".
    transport = ""

    def __init__(self) -> None:
        self.frames: list[FrameRecord] = []
        #: Every JSON object received, in order (valid JSON-RPC or not).
        self.received: list[dict[str, Any]] = []
        #: When each of :attr:`received` arrived (trio clock).
        self.arrival: list[float] = []
        #: Frames received that are not one JSON-RPC message (SI-05).
        self.junk: list[str] = []
        #: The peer ended its output (stdio: end of file).
        self.ended = False
        self._start = trio.current_time()
        self._changed = trio.Event()
        #: Frames go out whole, one sender at a time.
        self.send_lock = trio.Lock()

    # ------------------------------------------------------------ record

    def note(self, direction: str, text: str) -> None:
        """Record a frame or a note (``"--"``) at the current time."""
        self.frames.append(FrameRecord(trio.current_time() - self._start, direction, shorten(text)))

    def _wake(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    def arrived(self, data: bytes | str) -> None:
        """A frame came from the server: record it, judge it, keep it."""
        text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
        self.note("<-", text)
        decoded = decode(data)
        try:
            obj = orjson.loads(data)
        except orjson.JSONDecodeError:
            obj = None
        if not isinstance(obj, dict) or any(isinstance(item, FrameError) for item in decoded):
            self.junk.append(shorten(text))
        if isinstance(obj, dict):
            self.received.append(obj)
            self.arrival.append(trio.current_time())
        self._wake()

    def end(self) -> None:
        """The server's output ended."""
        if not self.ended:
            self.ended = True
            self.note("--", "the server's output ended")
            self._wake()

    # ------------------------------------------------------------- inbox

    def mark(self) -> int:
        """A position in :attr:`received`: pass it as ``since`` to look only later."""
        return len(self.received)

    def since(self, mark: int, predicate: Predicate | None = None) -> list[dict[str, Any]]:
        """The messages received after *mark* (those matching *predicate*)."""
        return [m for m in self.received[mark:] if predicate is None or predicate(m)]

    async def wait_for(
        self, predicate: Predicate, within: float, since: int = 0
    ) -> dict[str, Any] | None:
        """The first message after *since* matching *predicate*, waiting at most
        *within* seconds for it (``None`` when none came, or the output ended)."""
        with trio.move_on_after(within):
            while True:
                for message in self.received[since:]:
                    if predicate(message):
                        return message
                since = len(self.received)
                if self.ended:
                    return None
                await self._changed.wait()
        return None

    async def quiet(self, seconds: float) -> None:
        """Let *seconds* pass, collecting whatever arrives (a bounded watch)."""
        await trio.sleep(seconds)

    # -------------------------------------------------------------- send

    async def send_request(
        self, method: str, params: dict[str, Any] | None = None, request_id: RequestId | None = None
    ) -> RequestId:
        """Send a well-formed request (a fresh id unless given); returns its id."""
        rid = new_id() if request_id is None else request_id
        await self.send_frame(encode(Request(rid, method, params)))
        return rid

    async def send_notification(self, method: str, params: dict[str, Any] | None = None) -> None:
        await self.send_frame(encode(Notification(method, params)))

    async def send_object(self, obj: object) -> None:
        """Send any JSON value as one frame, as it is (malformed on purpose)."""
        await self.send_frame(orjson.dumps(obj))

    async def send_frame(self, data: bytes) -> None:
        """Send one frame of raw bytes."""
        await self.send_frames([data])

    async def send_frames(self, frames: list[bytes]) -> None:
        """Send frames (over stdio: in one write)."""
        raise NotImplementedError

    async def cancel(self, request_id: RequestId, reason: str = "trio-mcp check") -> None:
        """Cancel a request the way this transport and era do it."""
        await self.send_notification(
            "notifications/cancelled", {"requestId": request_id, "reason": reason}
        )
