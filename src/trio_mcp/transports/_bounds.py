"""The default time and size bounds of the network transports.

Kept apart from the transports themselves so that code which only names a
default (an entry point's signature) does not load a whole HTTP or WebSocket
stack to read one number.

Spec: HT-03 (reliability catalogue: D-01, D-03, W-06, W-08).
"""

from ..protocol import DEFAULT_MAX_MESSAGE_SIZE

#: Default seconds an HTTP connection may go without a complete request head (D-01, D-03).
HEADER_TIMEOUT = 10.0
#: The HTTP server's listen queue: connections the kernel completes before the
#: server accepts them. hypercorn's own default, 100, drops the SYNs of a burst
#: of more new connections than that (a thousand clients starting their calls at
#: once), and a dropped SYN is retried only after 1, 3, 7, 15... s, so calls
#: waited up to a minute. Linux caps it at ``net.core.somaxconn`` (4096 by default).
LISTEN_BACKLOG = 1024

#: trio-websocket's limit is per message; leave room over the codec's own limit.
WEBSOCKET_MAX_MESSAGE_SIZE = DEFAULT_MAX_MESSAGE_SIZE + 1024
#: Both WebSocket ends drain a message over their bound (kept by its ends only)
#: up to this many times the bound, 1 MiB at least, then close with 1009 (as
#: the HTTP client's ``DRAIN_FACTOR`` for a body): a peer streaming an endless
#: message costs bounded time and bandwidth, not only bounded memory.
WEBSOCKET_DRAIN_FACTOR = 4
#: The floor of the WebSocket drain limit, for small bounds.
WEBSOCKET_DRAIN_FLOOR = 1 << 20
#: Seconds a connection may take to send a complete opening handshake (W-08),
#: as the HTTP server's header timeout.
HANDSHAKE_TIMEOUT = HEADER_TIMEOUT
#: Seconds to wait for the peer's close frame after ours, before dropping the
#: TCP connection (a peer that stopped reading would hold it forever).
CLOSE_TIMEOUT = 5.0


def websocket_drain_limit(max_message_size: int) -> int:
    """Bytes of one oversize WebSocket message read before closing with 1009."""
    return max(WEBSOCKET_DRAIN_FACTOR * max_message_size, WEBSOCKET_DRAIN_FLOOR)
