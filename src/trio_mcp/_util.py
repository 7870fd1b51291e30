"""Small leaf helpers shared by every layer (imports nothing from trio_mcp)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Generic, NoReturn, TypeVar

import trio

_V = TypeVar("_V")


def unwrap_group(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The group's only non-Cancelled leaf, or the group itself if there are several.

    A nursery wraps the one error of its body in a group of one; at a public
    boundary the caller wants that error back. ``Cancelled`` leaves are set
    aside, never swallowed: a group that holds only ``Cancelled`` comes back
    whole, so the cancellation keeps propagating.
    """
    _, rest = group.split(trio.Cancelled)
    leaves = list(_leaves(rest)) if rest is not None else []
    if len(leaves) == 1:
        return leaves[0]
    return group


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for sub in exc.exceptions for leaf in _leaves(sub)]
    return [exc]


def reraise_unwrapped(group: BaseExceptionGroup[BaseException]) -> NoReturn:
    """Raise :func:`unwrap_group` of *group* in place of the group.

    The error keeps its own ``__cause__`` (a ``SessionClosed`` keeps the
    transport failure behind it, a ``HandshakeRefused`` the server's error);
    the group is not kept as its context.
    """
    error = unwrap_group(group)
    raise error from error.__cause__


@asynccontextmanager
async def unwrapping() -> AsyncIterator[None]:
    """Re-raise the one real error of an exception group leaving the body.

    Wrap a nursery in it (``async with unwrapping(), trio.open_nursery()``) to
    give the caller the body's own exception instead of a group of one.
    """
    try:
        yield
    except BaseExceptionGroup as group:
        reraise_unwrapped(group)


def covers(parent: str, uri: str) -> bool:
    """True if *uri* is *parent* itself or lies below it (``parent/...``)."""
    return uri == parent or uri.startswith(parent.rstrip("/") + "/")


class Flag:
    """A one-way flag tasks can wait for: ``trio.Event``'s ``is_set``, ``set``
    and ``wait``, with the Event made only when a task waits before it is set.

    Most flags of a session (stopping, closed) are set without anybody ever
    waiting; an Event each was two allocations and a set of waiters on every
    session, which a 2026-07-28 HTTP POST makes per request.

    Cancellation: ``wait`` is a checkpoint, like ``trio.Event.wait`` (a plain
    wait: cancelling it changes nothing).
    """

    __slots__ = ("_event", "_is_set")

    def __init__(self) -> None:
        self._is_set = False
        self._event: trio.Event | None = None

    def is_set(self) -> bool:
        return self._is_set

    def set(self) -> None:
        """Set the flag (idempotent) and wake every task waiting for it."""
        if not self._is_set:
            self._is_set = True
            if self._event is not None:
                self._event.set()

    async def wait(self) -> None:
        """Return once the flag is set (at once, after a checkpoint, if it is)."""
        if self._is_set:
            await trio.lowlevel.checkpoint()
            return
        if self._event is None:
            self._event = trio.Event()
        await self._event.wait()


class Shared(Generic[_V]):
    """One object for a value made again and again: called with a value equal
    to the last one, it returns that last one, so the new copy is dropped.

    For what every session of a server keeps and that is the same for all of
    them (the capabilities, the server's info): a server holds many idle
    sessions, and one copy each was ~1 KiB of every session.
    Values handed out must never be changed.
    """

    __slots__ = ("_value",)

    def __init__(self) -> None:
        self._value: _V | None = None

    def __call__(self, value: _V) -> _V:
        last = self._value
        if last is not None and last == value:
            return last
        self._value = value
        return value
