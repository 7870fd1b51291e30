"""Small leaf helpers shared by every layer (imports nothing from trio_mcp)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import NoReturn

import trio


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
