"""``RedisNonceStore``: ``single_use`` request states across instances (PT-10).

Theory of operation
-------------------
A ``single_use`` state must be accepted once, whichever instance the retry
reaches, so the consumed nonces live in Redis: consuming is one
``SET <prefix><nonce> 1 NX PX <ms until the state expires>``, atomic in Redis,
so of two instances opening the same state at once exactly one is told it is
the first. The key expires with the state (a state past its expiry is refused
as expired before its nonce is looked at), so nothing needs cleaning.

The connection setup is the task store's and the bus's (``trio_mcp._redis``): a URL (the store makes
its own client, which never retries: a retried ``SET NX`` whose first reply was
lost would refuse a fresh state as replayed) or a ready ``coredis.Redis``
client shared with them. A server given it (``RequestStateSealer(single_use=True,
nonce_store=RedisNonceStore(url))``) opens it while it runs
(``Server.running``).

Cancellation: :meth:`RedisNonceStore.consume` is cancelled only before its
command is sent; once sent, the round trip is shielded, so a nonce is never
consumed by a call that reports being cancelled.
"""

from __future__ import annotations

import math
from types import TracebackType
from typing import Final, Self

import anyio
import coredis
import coredis.exceptions
import trio
from coredis.tokens import PureToken

from .._errors import MCPError
from .._redis import RedisService, redis_client

__all__ = ["DEFAULT_PREFIX", "NonceStoreUnavailable", "RedisNonceStore"]

#: Default key prefix.
DEFAULT_PREFIX: Final = "trio_mcp:nonces:"

_CONNECTION_GONE: Final = (
    coredis.exceptions.RedisError,
    TimeoutError,
    OSError,
    anyio.ClosedResourceError,
    anyio.BrokenResourceError,
)


class NonceStoreUnavailable(MCPError):
    """The nonce store could not be reached: the state was neither accepted
    nor consumed (the request fails; the client may retry it)."""


class RedisNonceStore:
    """A :class:`~trio_mcp.lowlevel.NonceStore` in Redis, shared by every
    instance given the same Redis and ``prefix`` (see the module docstring)."""

    def __init__(self, redis: str | coredis.Redis[bytes], *, prefix: str = DEFAULT_PREFIX) -> None:
        if not prefix:
            raise ValueError("the key prefix must not be empty")
        self._client, self._owns_client = redis_client(redis, "nonces")
        self.prefix = prefix
        self._service = RedisService(NonceStoreUnavailable)

    @property
    def is_open(self) -> bool:
        return self._service.is_open

    async def consume(self, nonce: str, expires_at: float, now: float) -> bool:
        """True the first time *nonce* is consumed by any instance, False after.

        Raises:
            NonceStoreUnavailable: the store is not open or Redis cannot be reached.
        """
        if not self._service.is_open:
            raise NonceStoreUnavailable(
                "the RedisNonceStore is not open: use 'async with RedisNonceStore(...)'"
            )
        px = max(1, math.ceil((expires_at - now) * 1000))
        await trio.lowlevel.checkpoint_if_cancelled()
        with trio.CancelScope(shield=True):
            try:
                done = await self._client.set(
                    self.prefix + nonce, b"1", px=px, condition=PureToken.NX
                )
            except _CONNECTION_GONE as error:
                raise NonceStoreUnavailable(f"cannot reach the nonce store: {error}") from error
        return bool(done)

    async def __aenter__(self) -> Self:
        await self._service.open(self._serve, "RedisNonceStore")
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool | None:
        return await self._service.close(exc_type, exc, traceback)

    async def _serve(
        self, stop: trio.Event, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        async with self._service.connected(
            self._client, self._owns_client, _CONNECTION_GONE, NonceStoreUnavailable
        ) as scope:
            # Shielded once open: the client closes through the exit, in order.
            scope.shield = True
            task_status.started()
            await stop.wait()
