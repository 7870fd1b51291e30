"""trio_mcp.bus: the publish/subscribe seam between the instances of one server.

Give every instance the same bus, ``Server(bus=RedisBus(url))``, and each
list change and resource update made on any instance reaches every
``subscriptions/listen`` stream and every handshake-era subscription on every
instance. :class:`MemoryBus` joins the servers of one process;
:class:`RedisBus` (the ``redis`` extra, imported on first use) joins
processes and machines. The delivery promise: at most once, in order per
publisher, and a gap (a slow subscriber, a lost Redis connection) is always
followed by a :class:`Resync`, never silence. See the how-to "Deploy several
instances behind a load balancer".
"""

from typing import TYPE_CHECKING, Any

from ._bus._base import (
    Bus,
    BusEvent,
    BusMessage,
    BusUnavailable,
    MemoryBus,
    Resync,
    Subscription,
)
from ._errors import MissingExtra

__all__ = [
    "Bus",
    "BusEvent",
    "BusMessage",
    "Resync",
    "Subscription",
    "MemoryBus",
    "RedisBus",
    "BusUnavailable",
    "MissingExtra",
]

if TYPE_CHECKING:
    from ._bus._redis import RedisBus


def __getattr__(name: str) -> Any:
    # The Redis bus needs coredis (the redis extra): imported only when asked for.
    if name == "RedisBus":
        try:
            from ._bus._redis import RedisBus
        except ModuleNotFoundError as error:
            if error.name is None or error.name.partition(".")[0] != "coredis":
                raise
            raise MissingExtra("RedisBus", "redis") from None
        globals()[name] = RedisBus
        return RedisBus
    raise AttributeError(f"module 'trio_mcp.bus' has no attribute {name!r}")
