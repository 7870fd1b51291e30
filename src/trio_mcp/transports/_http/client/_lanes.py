"""The HTTP client's connection pool: one request per lane, found in O(1).

Why not httpx's own pool: behind every ``httpx.AsyncClient`` is an httpcore
``AsyncConnectionPool``, which re-plans every queued request against every
connection each time a request starts or a response closes (and asks each idle
connection's socket whether it is readable, one ``poll`` each). At 32 calls in
flight that was about 470 idle checks and 34 ``poll`` calls per request, a
quarter of the client process's CPU, and the HTTP rows of ``bench/all.py`` are
bound by the client's CPU (bench/README.md, "HTTP, 32 in flight").

HTTP/1.1 carries one response at a time on a connection, so the pool here is a
stack of *lanes*: each lane is an ``httpx.AsyncHTTPTransport`` of its own,
limited to one connection, and carries one request at a time. A request takes
the idle lane used last (its connection is the warmest, the least likely to
have expired), or opens a new lane while there are fewer than *max_lanes*, or
waits for one; the lane is handed back when its response is closed (read to the
end by httpx, or closed by whoever streamed it). Each lane's own httpcore pool
then only ever plans one request against one connection. Everything HTTP (h11,
keep-alive and its expiry, TLS, timeouts, proxies mounted by the client) stays
httpx's and httpcore's.

Cancellation:
    :meth:`LanePool.handle_async_request` is cancellable while it waits for a
    lane and while the lane sends the request; a request that fails or is
    cancelled before its response gives its lane back at once. A response
    closed by cancellation (httpx closes it in a ``finally``) gives its lane
    back too. :meth:`LanePool.aclose` closes every lane and fails the
    requests still waiting for one (``RuntimeError``, as a request after it
    gets); it is not shielded (the client closing it shields it).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import httpx
import trio

#: Makes a new lane: a transport that will carry one request at a time.
LaneFactory = Callable[[], httpx.AsyncBaseTransport]


def default_lane(verify: object) -> LaneFactory:
    """Lanes as httpx's own default transport, limited to one connection each."""

    def make() -> httpx.AsyncBaseTransport:
        return httpx.AsyncHTTPTransport(
            verify=verify,  # type: ignore[arg-type]
            limits=httpx.Limits(max_connections=1, max_keepalive_connections=1),
        )

    return make


class LanePool(httpx.AsyncBaseTransport):
    """An ``httpx`` transport that runs each request on a lane of its own (see
    the module docstring); pass it as ``httpx.AsyncClient(transport=...)``.

    At most *max_lanes* requests are in flight; one more waits (with no time
    limit: the client's ``pool`` timeout does not apply here) until a response
    is closed, or fails when the pool is closed.
    """

    __slots__ = ("_closed", "_free", "_idle", "_lanes", "_make_lane", "_waiting", "max_lanes")

    def __init__(self, make_lane: LaneFactory, *, max_lanes: int) -> None:
        if max_lanes < 1:
            raise ValueError("max_lanes must be >= 1")
        self.max_lanes = max_lanes
        self._make_lane = make_lane
        self._free = trio.Semaphore(max_lanes)
        self._idle: list[httpx.AsyncBaseTransport] = []
        self._lanes: list[httpx.AsyncBaseTransport] = []
        self._closed = False
        #: The waits for a lane, cancelled by aclose.
        self._waiting: set[trio.CancelScope] = set()

    @property
    def lanes(self) -> int:
        """Lanes opened so far (each holds at most one connection)."""
        return len(self._lanes)

    @property
    def in_flight(self) -> int:
        """Requests holding a lane: sent and not yet closed."""
        return self.max_lanes - self._free.value

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self._check_open()
        try:
            # A free lane is taken without a checkpoint: the request's own I/O
            # yields soon enough, and a yield here cost a scheduler pass a call.
            self._free.acquire_nowait()
        except trio.WouldBlock:
            # aclose cancels this wait: a request must not wait for a closed
            # pool's lanes (their responses may never be closed).
            with trio.CancelScope() as waiting:
                self._waiting.add(waiting)
                try:
                    await self._free.acquire()
                finally:
                    self._waiting.discard(waiting)
            if self._closed:
                if not waiting.cancelled_caught:  # handed a permit as the pool closed
                    self._free.release()
                self._check_open()
        lane: httpx.AsyncBaseTransport | None = None
        try:
            if self._idle:
                lane = self._idle.pop()
            else:
                lane = self._make_lane()
                self._lanes.append(lane)
            response = await lane.handle_async_request(request)
        except BaseException:
            if lane is None:  # no lane could be made: only the permit goes back
                self._free.release()
            else:
                self._give_back(lane)
            raise
        stream = response.stream
        if not isinstance(stream, httpx.AsyncByteStream):  # an httpx transport's never is
            self._give_back(lane)
            raise TypeError(f"a lane returned a response with a {type(stream).__name__} body")
        response.stream = _LaneStream(stream, self, lane)
        return response

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("the connection pool is closed")

    def _give_back(self, lane: httpx.AsyncBaseTransport) -> None:
        if not self._closed:
            self._idle.append(lane)
        self._free.release()

    async def aclose(self) -> None:
        self._closed = True
        for waiting in self._waiting:
            waiting.cancel(reason="the connection pool is closed")
        lanes, self._lanes, self._idle = self._lanes, [], []
        for lane in lanes:
            await lane.aclose()


class _LaneStream(httpx.AsyncByteStream):
    """A response body that gives its lane back when it is closed (once)."""

    __slots__ = ("_inner", "_lane", "_pool")

    def __init__(
        self, inner: httpx.AsyncByteStream, pool: LanePool, lane: httpx.AsyncBaseTransport | None
    ) -> None:
        self._inner = inner
        self._pool = pool
        self._lane = lane

    def __aiter__(self) -> AsyncIterator[bytes]:
        # The inner stream's own iterator: no generator frame of ours per chunk.
        return self._inner.__aiter__()

    async def aclose(self) -> None:
        lane, self._lane = self._lane, None
        try:
            await self._inner.aclose()
        finally:
            if lane is not None:
                self._pool._give_back(lane)
