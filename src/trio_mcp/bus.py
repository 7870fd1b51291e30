"""trio_mcp.bus: what the instances of one server share, beside the task store.

Give every instance the same bus, ``Server(bus=RedisBus(url))``, and each
list change and resource update made on any instance reaches every
``subscriptions/listen`` stream and every handshake-era subscription on every
instance. :class:`MemoryBus` joins the servers of one process;
:class:`RedisBus` (the ``redis`` extra, imported on first use) joins
processes and machines. The delivery promise: at most once, in order per
publisher, and a gap (a slow subscriber, a lost Redis connection) is always
followed by a :class:`Resync`, never silence.

Who carries what between instances:

* the bus: list changes (``notifications/*/list_changed``) and resource
  updates (``server.resource_updated(uri)``), hints to read again, as above;
* task status: not the bus. A task's record lives in the task store
  (``TaskRunner(RedisTaskStore(url))``), so ``tasks/get`` answers on any
  instance from the record, and a ``tasks/result`` waiting on one instance
  for a task another runs is woken by the store's own Redis channel, which
  every change publishes on in the same script as its write (a
  ``tasks/cancel`` reaches the instance running the task the same way). The record is
  the truth: a wakeup missed while that channel reconnects wakes every
  waiter to read again, so none waits on a finished task;
* ``requestState``: nothing travels; every instance signs and verifies with
  the same key ring, and :class:`RedisNonceStore` keeps single-use nonces.

:class:`RedisNonceStore` (the ``redis`` extra too) is the nonce store of
``RequestStateSealer(single_use=True, nonce_store=...)`` that every instance
shares, so a single-use ``requestState`` is accepted once whichever instance
the retry reaches. See the how-to "Deploy several instances behind a load
balancer".
"""

import importlib
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
    # single_use request states across instances
    "RedisNonceStore",
    "NonceStoreUnavailable",
    "MissingExtra",
]

if TYPE_CHECKING:
    from ._bus._redis import RedisBus
    from ._server._redis_nonces import NonceStoreUnavailable, RedisNonceStore

#: What needs coredis, and where it is.
_REDIS = {
    "RedisBus": "._bus._redis",
    "RedisNonceStore": "._server._redis_nonces",
    "NonceStoreUnavailable": "._server._redis_nonces",
}


def __getattr__(name: str) -> Any:
    # The Redis pieces need coredis (the redis extra): imported only when asked for.
    if name in _REDIS:
        try:
            module = importlib.import_module(_REDIS[name], __name__.rpartition(".")[0])
        except ModuleNotFoundError as error:
            if error.name is None or error.name.partition(".")[0] != "coredis":
                raise
            raise MissingExtra(name, "redis") from None
        value = getattr(module, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'trio_mcp.bus' has no attribute {name!r}")
