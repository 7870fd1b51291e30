"""What the Redis-backed parts share: the task store, the bus and the nonce store.

Theory of operation
-------------------
Each part takes either a URL or a ready ``coredis.Redis`` client
(:func:`redis_client`). A URL makes a client of the part's own, opened and
closed with it, that never retries a command: a retried Lua script or
``SET NX`` whose first reply was lost would run twice (a task created twice, a
fresh state refused as replayed). A ready client is the caller's, shared with
the other parts: it must not decode responses (everything here is bytes) and is
never closed here.

Each part runs one background service while it is open (the client, a
subscription and its listener, or only the client): :class:`RedisService` is
that service's life, entered from the part's ``__aenter__`` and left from its
``__aexit__``. The coredis client is a task group, so a failure to open comes
out wrapped in exception groups; the part's own "unavailable" error is raised
as itself.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext
from types import TracebackType
from typing import Protocol

import coredis
import trio
from coredis.retry import NoRetryPolicy


def redis_client(redis: str | coredis.Redis[bytes], what: str) -> tuple[coredis.Redis[bytes], bool]:
    """The client for *redis*, and whether the part owns it (see the module
    docstring). *what* names what the part keeps, for the error.

    Raises:
        ValueError: a ready client that decodes responses.
    """
    if isinstance(redis, str):
        return coredis.Redis.from_url(redis, retry_policy=NoRetryPolicy()), True
    if redis.decode_responses:
        raise ValueError(f"the Redis client must not decode responses ({what} are bytes)")
    return redis, False


class Serve(Protocol):
    """A part's background service, started with ``nursery.start``: it calls
    ``task_status.started()`` once open, then runs until *stop* is set."""

    async def __call__(
        self, stop: trio.Event, *, task_status: trio.TaskStatus[None] = ...
    ) -> None: ...


class RedisService:
    """The life of one Redis-backed part's background service.

    Args:
        unavailable: the part's error for a Redis it cannot reach; raised as
            itself when opening fails with it (alone, however grouped).
    """

    __slots__ = ("_manager", "_stop", "_unavailable")

    def __init__(self, unavailable: type[Exception]) -> None:
        self._unavailable = unavailable
        self._manager: AbstractAsyncContextManager[trio.Nursery] | None = None
        self._stop = trio.Event()

    @property
    def is_open(self) -> bool:
        """Whether the service runs (entered and not yet left)."""
        return self._manager is not None

    async def open(self, serve: Serve, what: str) -> None:
        """Start *serve* in a nursery of its own and wait until it is open.

        Raises:
            the part's ``unavailable`` error: already open (*what* names the
                part), or Redis cannot be reached.

        Cancellation: while opening, cancelled as ``nursery.start`` is; the
        nursery is then left, with nothing running in it.
        """
        if self._manager is not None:
            raise self._unavailable(f"this {what} is already open")
        self._stop = trio.Event()
        manager = trio.open_nursery()
        nursery = await manager.__aenter__()
        try:
            await nursery.start(serve, self._stop)
        except BaseException as error:
            await manager.__aexit__(None, None, None)  # nothing runs in it any more
            lone = error
            while isinstance(lone, BaseExceptionGroup) and len(lone.exceptions) == 1:
                lone = lone.exceptions[0]
            if isinstance(lone, self._unavailable):
                raise lone from lone.__cause__
            raise
        self._manager = manager

    @asynccontextmanager
    async def connected(
        self,
        client: coredis.Redis[bytes],
        owned: bool,
        gone: tuple[type[BaseException], ...],
        unavailable: type[Exception],
    ) -> AsyncIterator[trio.CancelScope]:
        """Inside the service: *client* opened (when the part owns it) and
        Redis answering a ``PING``; yields the service's cancel scope, which
        the part shields once it is open, so that a cancellation around it
        ends it through its exit, in order (coredis's clean-up trips on its
        own closed connection when its tasks are torn down all at once).

        Raises:
            *unavailable*: the ``PING`` failed with one of *gone*.
        """
        opened: AbstractAsyncContextManager[object] = client if owned else nullcontext()
        with trio.CancelScope() as scope:
            async with opened:
                try:
                    await client.ping()
                except gone as error:
                    raise unavailable(f"cannot reach Redis: {error}") from error
                yield scope

    async def close(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool | None:
        """Stop the service and leave its nursery (the part's ``__aexit__``).

        Cancellation: as the nursery's exit; the service shields its own
        closing, so it ends in order."""
        manager, self._manager = self._manager, None
        assert manager is not None, "__aexit__ without __aenter__"
        self._stop.set()
        return await manager.__aexit__(exc_type, exc, traceback)
