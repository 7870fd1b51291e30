"""The transport contract: a Trio channel of frames.

One item is one complete JSON-RPC message (bytes, UTF-8 JSON): framing is the
transport's business. ``receive`` raises :class:`trio.EndOfChannel` on a clean
close by the peer and :class:`trio.BrokenResourceError` on failure; ``aclose`` is
idempotent. Any ``trio.abc.Channel[bytes]`` qualifies.
"""

from __future__ import annotations

from typing import TypeAlias

import trio

#: What a session runs over.
Transport: TypeAlias = trio.abc.Channel[bytes]
