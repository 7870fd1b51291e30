"""A task store in Redis, shared by every worker behind one endpoint (TK-07,
TK-10, TK-12, TK-14, TK-15, TK-17, TK-18).

Theory of operation
-------------------
:class:`RedisTaskStore` is the :class:`~trio_mcp._tasks._store.TaskStore`
of several processes: whichever worker serves ``tasks/get``, ``tasks/result``
or ``tasks/cancel`` reads the record another one wrote. It behaves as
:class:`~trio_mcp._tasks._store.MemoryTaskStore` does, method for method
(the two run one test suite); only where the state lives differs.

Every method is one Lua script run by Redis (``EVALSHA``, loaded on first use):
Redis runs a script alone, start to end, so each method is atomic across every
process and client sharing the store, with no lock and no WATCH/MULTI retry. The
scripts never compute a task's moves; they keep records, owners and indexes.
The one move the store makes itself, ``EXPIRE`` for a task still running when
its ttl elapses, is computed here, in Python, from the last record the script
hands back (:func:`~trio_mcp.protocol._tasks.expire_task`): the record is
dropped in Redis and the ``FAILED`` snapshot is what :meth:`expire_due`
returns, exactly as the memory store drops the record and returns that
snapshot.

A record is stored as canonical JSON bytes: the attrs fields of
:class:`~trio_mcp.protocol.TaskRecord`, walked generically by a cattrs
converter (enums by value, ``moves`` as a list of objects, the JSON-object
fields as they are), dumped by orjson with sorted keys, so equal records of
the same Python types are equal bytes, and a field added later needs no change
here. :meth:`update` is a
compare-and-set on the whole record: the script compares the stored bytes with
those of *expected* and, only if they are the same, writes the new ones. Two
records can be equal in Python yet be written differently (an ``int`` where a
``float`` is, ``1`` and ``1.0`` in a result): when the bytes differ, the
stored record is decoded and compared with *expected*; if they are equal, the
compare-and-set is retried against the stored bytes, so the test is the
protocol's "the stored record is *expected*", not a byte test.

Times are decided by the store's ``clock`` (wall-clock seconds, injectable as
for the memory store), which each script receives as ``now``: whether a record
has expired, when an expired id is forgotten. The workers' clocks should agree
(NTP): a task is dropped by the first one whose clock says it is due. Redis's
own key expiry (``PX``) is only a backstop that frees the records of a store
nobody touches any more: a record key lives ``key_margin`` seconds (default an
hour) past its ttl, so that :meth:`expire_due` or the next access still finds
it and reports its ``EXPIRE`` move, and an expired marker ``key_margin``
seconds past ``remember_expired``; the small index entries of such a task stay
until the next :meth:`expire_due`, which drops them.

Key layout
----------
Every key starts with the store's ``prefix`` (default ``trio_mcp:tasks:``), so
several servers, or several stores, share one Redis; no prefix may be a prefix
of another. With ``P`` the prefix::

    P task:<id>       string  the record's canonical JSON; PX: ttl + key_margin
    P owners          hash    task id -> its owner, encoded; a task is held iff here
    P order           zset    task id by creation sequence (all tasks: the max_tasks count)
    P owner:<owner>   zset    task id by creation sequence (one owner's: pages, the per-owner count)
    P due             zset    task id by expiry time (tasks with a ttl)
    P seq             string  the last creation sequence handed out (INCR)
    P expired:<id>    string  "<dropped at> <owner>": a task dropped for its ttl,
                              remembered; PX: remember_expired + key_margin
    P expired         zset    remembered task id by drop sequence (oldest forgotten first)
    P expired-seq     string  the last drop sequence
    P changed         channel every change publishes the task id here

An owner (TK-18) is encoded as JSON, so it must be ``None``, a ``str``, an
``int`` or a tuple of those (:class:`UnsupportedOwner` otherwise): a token's
subject or a client id is a string. A ``tasks/list`` cursor holds a creation
sequence, as the memory store's does, so it stays valid across the creations
and removals of other tasks (TK-15) and across the stores sharing the prefix.
The scripts also touch keys they build from the prefix and a task id; a Redis
Cluster allows that only within one slot, so a clustered deployment gives the
prefix a hash tag (``{trio_mcp}:tasks:``); the tests use a single server.

Waiting (TK-12, TK-14)
----------------------
Each change (an update that changes the bytes, a delete, an expiry) publishes
the task id on ``P changed`` in the same script as the write. Each store object
keeps one subscription to that channel (one connection, opened by
``async with``), whatever the number of waiters, and a listener task that sets
a local Trio event per task id, as the memory store's writes do. A waiter
registers its event *before* it reads the record, so a change made after that
read publishes after it and sets the event: no wakeup is lost between the read
and the wait. It also sleeps, on Trio's clock, until the ttl is due by the
store's clock, then looks again (an expiry is a change nobody writes). When the
subscription is lost and made again (coredis reconnects by itself), messages
may have been missed meanwhile, so every waiter wakes and reads again.

Atomicity and cancellation
--------------------------
Create (with its bounds and its duplicate check), update (the compare-and-set),
delete, an expiry (drop, remember, trim the remembered ids) and
:meth:`expire_due` are each one script, so they are atomic. Cancellation
follows the :class:`~trio_mcp._tasks._store.TaskStore` protocol:

* :meth:`create`, :meth:`update`, :meth:`delete`, :meth:`expire_due` are
  cancelled only before they send their script; once sent, the round trip is
  shielded, so "cancelled" means nothing was written and "returned" means it
  was. Give the client a ``stream_timeout`` to bound that round trip.
* :meth:`get`, :meth:`expired`, :meth:`list`, :meth:`count` and the reads of
  :meth:`wait_changed` are cancellable at any point; a cancelled one changes
  nothing, except that its script may have dropped expired records, as any
  access may.
* :meth:`wait_changed` is cancellable while waiting; its event is unregistered
  on the way out, and the store's subscription is the store's, not the
  waiter's, so there is nothing to unsubscribe.
* Leaving ``async with`` (cancelled or not) stops the listener, unsubscribes
  and closes the client, in that order: the client and the subscription run in
  a task of the store's own that is shielded once open and told to stop by the
  exit, so an outside cancellation never tears coredis's tasks down midway.
  The exit waits for that (one round trip).

A failure to reach Redis, or an error from it, raises
:class:`TaskStoreUnavailable` (the cause attached); for a write, whether it
was done is then unknown. A client made from a URL does not retry commands:
a script whose reply was lost must not run twice (a retried create would
find its own task and raise :class:`TaskExists`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from contextlib import suppress
from types import TracebackType
from typing import Any, Final, Self

import anyio
import attrs
import coredis
import coredis.exceptions
import coredis.patterns.pubsub
import orjson
import trio
from cattrs.preconf.orjson import make_converter

from .._redis import RedisService, redis_client
from ..protocol import TaskRecord
from ..protocol._tasks import expire_task
from ._store import (
    MAX_REMEMBERED,
    MAX_TASKS,
    MAX_TASKS_PER_OWNER,
    REMEMBER_EXPIRED,
    InvalidCursor,
    Owner,
    TaskConflict,
    TaskExists,
    TaskLimitExceeded,
    TaskStoreError,
    TaskStoreUnavailable,
    UnknownTask,
    _decode_cursor,
    _encode_cursor,
)

__all__ = [
    "DEFAULT_PREFIX",
    "KEY_MARGIN",
    "RedisTaskStore",
    "RedisTaskStoreStatistics",
    "TaskStoreUnavailable",
    "UnsupportedOwner",
    "decode_record",
    "encode_record",
]

#: Default key prefix.
DEFAULT_PREFIX: Final = "trio_mcp:tasks:"
#: Default seconds a key outlives its logical expiry (Redis's backstop).
KEY_MARGIN: Final = 3600.0


class UnsupportedOwner(TaskStoreError, TypeError):
    """An owner the Redis store cannot keep: it must be None, a str, an int or a
    tuple of those (it is stored as JSON, so it must compare as its JSON does)."""


#: What a request on a connection being torn down may raise.
_CONNECTION_GONE: Final = (
    coredis.exceptions.RedisError,
    TimeoutError,
    anyio.ClosedResourceError,
    anyio.BrokenResourceError,
)
#: What a failed ``PING`` on opening raises: the store is then unavailable.
_PING_FAILED: Final = (coredis.exceptions.RedisError, TimeoutError)


# -- records as canonical bytes

#: A converter of our own, not the wire one: Python field names, every field
#: kept (None included), so decoding gives back an equal record.
_converter = make_converter()


def encode_record(record: TaskRecord) -> bytes:
    """The canonical bytes of *record*: its attrs fields as JSON, keys sorted at
    every depth, so equal records (of the same Python types) are equal bytes."""
    return orjson.dumps(_converter.unstructure(record), option=orjson.OPT_SORT_KEYS)


def decode_record(raw: bytes) -> TaskRecord:
    """The record :func:`encode_record` made *raw* from (an equal one)."""
    return _converter.structure(orjson.loads(raw), TaskRecord)


def _owner_ok(owner: object) -> bool:
    if owner is None or isinstance(owner, str):
        return True
    if isinstance(owner, int):
        # True == 1 in Python but not in JSON: a bool would be a second owner.
        return not isinstance(owner, bool)
    return isinstance(owner, tuple) and all(_owner_ok(part) for part in owner)


def _encode_owner(owner: Owner) -> bytes:
    if not _owner_ok(owner):
        raise UnsupportedOwner(
            f"owner {owner!r}: the Redis task store keeps None, str, int or tuples of those"
        )
    return orjson.dumps(owner)


def _number(value: float) -> str:
    """A float as the scripts receive it: repr round-trips exactly, and Lua's
    tonumber and Redis's score parsing read it back to the same double."""
    return repr(float(value))


def _milliseconds(seconds: float) -> str:
    """A PX argument: whole milliseconds, at least 1; '' for no expiry."""
    if not math.isfinite(seconds):
        return ""
    return str(max(1, math.ceil(seconds * 1000)))


# -- the scripts: one body, one operation per call (ARGV[1])
#
# Numbers cross into Redis as the strings Python made (ARGV); a Lua number
# passed to redis.call is formatted with 14 digits, which would round times.

_SCRIPT: Final = r"""
local SEQ, ORDER, OWNERS, DUE, GONE, GONE_SEQ = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local op, P, NOW, CUTOFF = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local now, cutoff = tonumber(NOW), tonumber(CUTOFF)
local REMEMBER, GONE_PX, MAX_REMEMBERED = ARGV[5] == '1', ARGV[6], tonumber(ARGV[7])
local CHANNEL = P .. 'changed'

local function task_key(id) return P .. 'task:' .. id end
local function owner_key(enc) return P .. 'owner:' .. enc end
local function gone_key(id) return P .. 'expired:' .. id end

local function set_with_px(key, value, px)
  if px == '' then redis.call('SET', key, value) else redis.call('SET', key, value, 'PX', px) end
end

-- Remove a held task everywhere and wake its waiters.
local function drop(id, enc)
  redis.call('DEL', task_key(id))
  redis.call('HDEL', OWNERS, id)
  redis.call('ZREM', ORDER, id)
  redis.call('ZREM', owner_key(enc), id)
  redis.call('ZREM', DUE, id)
  redis.call('PUBLISH', CHANNEL, id)
end

-- Drop a held task for its ttl and remember it (at most MAX_REMEMBERED ids,
-- the oldest forgotten first); its last stored record, or false.
local function expire(id, enc)
  local raw = redis.call('GET', task_key(id))
  drop(id, enc)
  if REMEMBER then
    local n = redis.call('INCR', GONE_SEQ)
    set_with_px(gone_key(id), NOW .. ' ' .. enc, GONE_PX)
    redis.call('ZADD', GONE, n, id)
    while redis.call('ZCARD', GONE) > MAX_REMEMBERED do
      local oldest = redis.call('ZPOPMIN', GONE)
      redis.call('DEL', gone_key(oldest[1]))
    end
  end
  return raw
end

-- Forget the remembered ids dropped at or before CUTOFF, oldest first.
local function forget_old()
  while true do
    local first = redis.call('ZRANGE', GONE, 0, 0)[1]
    if not first then return end
    local marker = redis.call('GET', gone_key(first))
    if marker then
      if tonumber(string.match(marker, '^[^ ]+')) > cutoff then return end
      redis.call('DEL', gone_key(first))
    end
    redis.call('ZREM', GONE, first)
  end
end

-- The owner of a held task whose ttl has not elapsed at now; a due one is
-- expired first (and false returned).
local function live(id)
  local enc = redis.call('HGET', OWNERS, id)
  if not enc then return false end
  local due = redis.call('ZSCORE', DUE, id)
  if due and now >= tonumber(due) then
    expire(id, enc)
    return false
  end
  return enc
end

-- Expire every task due at now, in creation order; their last records.
local function expire_all()
  local ids = redis.call('ZRANGEBYSCORE', DUE, '-inf', NOW)
  local seq = {}
  for _, id in ipairs(ids) do seq[id] = tonumber(redis.call('ZSCORE', ORDER, id) or '0') end
  table.sort(ids, function(a, b) return seq[a] < seq[b] end)
  local out = {}
  for _, id in ipairs(ids) do
    local enc = redis.call('HGET', OWNERS, id)
    if enc then
      local raw = expire(id, enc)
      if raw then out[#out + 1] = raw end
    else
      redis.call('ZREM', DUE, id)
    end
  end
  return out
end

if op == 'create' then
  local id, raw, enc, due, px = ARGV[8], ARGV[9], ARGV[10], ARGV[11], ARGV[12]
  local max_tasks, max_per_owner = tonumber(ARGV[13]), tonumber(ARGV[14])
  local okey = owner_key(enc)
  forget_old()
  if live(id) or redis.call('EXISTS', gone_key(id)) == 1 then return {'exists'} end
  if redis.call('ZCARD', ORDER) >= max_tasks or redis.call('ZCARD', okey) >= max_per_owner then
    expire_all()  -- expired tasks do not count against the bounds
  end
  if redis.call('ZCARD', ORDER) >= max_tasks then return {'limit', 'max_tasks'} end
  if redis.call('ZCARD', okey) >= max_per_owner then return {'limit', 'max_tasks_per_owner'} end
  local seq = redis.call('INCR', SEQ)
  set_with_px(task_key(id), raw, px)
  redis.call('HSET', OWNERS, id, enc)
  redis.call('ZADD', ORDER, seq, id)
  redis.call('ZADD', okey, seq, id)
  if due ~= '' then redis.call('ZADD', DUE, due, id) end
  return {'ok'}
elseif op == 'get' then
  local id, enc = ARGV[8], ARGV[9]
  local held = live(id)
  if not held or held ~= enc then return false end
  return redis.call('GET', task_key(id))
elseif op == 'peek' then
  local id = ARGV[8]
  if not live(id) then return false end
  return redis.call('GET', task_key(id))
elseif op == 'expired' then
  local id, enc = ARGV[8], ARGV[9]
  live(id)  -- a task due now counts as expired
  forget_old()
  local marker = redis.call('GET', gone_key(id))
  if marker and string.sub(marker, string.find(marker, ' ', 1, true) + 1) == enc then return 1 end
  return 0
elseif op == 'update' then
  local id, expected, new, due, px = ARGV[8], ARGV[9], ARGV[10], ARGV[11], ARGV[12]
  local enc = live(id)
  if not enc then return {'unknown'} end
  local current = redis.call('GET', task_key(id))
  if not current then
    drop(id, enc)  -- its key outlived by its indexes (the backstop ran): gone
    return {'unknown'}
  end
  if current ~= expected then return {'conflict', current} end
  if new ~= current then
    set_with_px(task_key(id), new, px)
    if due ~= '' then redis.call('ZADD', DUE, due, id) else redis.call('ZREM', DUE, id) end
    redis.call('PUBLISH', CHANNEL, id)
  end
  return {'ok'}
elseif op == 'delete' then
  local id = ARGV[8]
  local enc = redis.call('HGET', OWNERS, id)
  if not enc then return false end
  local raw = redis.call('GET', task_key(id))
  drop(id, enc)
  return raw
elseif op == 'list' then
  local enc, after, limit = ARGV[8], ARGV[9], tonumber(ARGV[10])
  -- Only a position this store handed out: not past the newest task.
  if tonumber(after) > tonumber(redis.call('GET', SEQ) or '0') then return {'invalid'} end
  expire_all()
  local rows = redis.call('ZRANGEBYSCORE', owner_key(enc), '(' .. after, '+inf',
    'WITHSCORES', 'LIMIT', 0, limit + 1)
  local shown = math.min(#rows / 2, limit)
  local out = {'ok', ''}
  for i = 1, shown do out[#out + 1] = redis.call('GET', task_key(rows[2 * i - 1])) end
  if #rows / 2 > limit then out[2] = rows[2 * shown] end
  return out
elseif op == 'expire_due' then
  local out = expire_all()
  forget_old()
  return out
end
return redis.error_reply('unknown task store operation ' .. op)
"""


@attrs.frozen
class RedisTaskStoreStatistics:
    """What one :class:`RedisTaskStore` object sees (not the shared store)."""

    #: :meth:`RedisTaskStore.wait_changed` calls parked now, waiting for a change.
    waiting: int
    #: Change messages received on the store's channel.
    messages: int
    #: Times the subscription was lost and made again (every waiter then woke).
    resubscriptions: int
    #: Task ids with a waiter registered now (parked or reading).
    watched: int


class RedisTaskStore:
    """A :class:`~trio_mcp.lowlevel.TaskStore` in Redis, shared by every
    process given the same Redis and ``prefix`` (see the module docstring).

    Args:
        redis: a connection URL (``redis://host:port/db``, ``unix:///path``),
            from which the store makes its own client (that does not retry
            commands), or a ready ``coredis.Redis`` client, made with
            ``decode_responses=False`` (the default), that the caller has
            entered (``async with client:``) and keeps open around the store.
        prefix: the start of every key and of the change channel.
        key_margin: seconds a key outlives its logical expiry in Redis (default
            an hour): the backstop that frees the keys of an abandoned store.
        clock, max_tasks, max_tasks_per_owner: as for
            :class:`~trio_mcp.tasks.MemoryTaskStore`; the bounds count every task under
            the prefix, whoever created it.
        remember_expired, max_remembered: as for
            :class:`~trio_mcp.tasks.MemoryTaskStore`.

    The store must be entered, ``async with RedisTaskStore(...) as store:``, in
    the task that will leave it: that opens the client (for a URL), checks
    that Redis answers (:class:`TaskStoreUnavailable` at once if not), opens
    the change subscription and starts its listener. As with any Trio context
    that runs tasks (the coredis client's among them), an exception raised in
    the body comes out of the ``async with`` in an exception group.
    """

    def __init__(
        self,
        redis: str | coredis.Redis[bytes],
        *,
        prefix: str = DEFAULT_PREFIX,
        clock: Callable[[], float] = time.time,
        max_tasks: int = MAX_TASKS,
        max_tasks_per_owner: int = MAX_TASKS_PER_OWNER,
        remember_expired: float = REMEMBER_EXPIRED,
        max_remembered: int = MAX_REMEMBERED,
        key_margin: float = KEY_MARGIN,
    ) -> None:
        if max_tasks < 1 or max_tasks_per_owner < 1:
            raise ValueError("max_tasks and max_tasks_per_owner must be at least 1")
        if not prefix:
            raise ValueError("the key prefix must not be empty")
        if not key_margin >= 0:
            raise ValueError("key_margin must be at least 0")
        self._client, self._owns_client = redis_client(redis, "records")
        self.prefix = prefix
        self.clock = clock
        self.max_tasks = max_tasks
        self.max_tasks_per_owner = max_tasks_per_owner
        self.remember_expired = remember_expired
        self.max_remembered = max_remembered
        self.key_margin = key_margin
        self._channel = f"{prefix}changed".encode()
        self._keys = [
            f"{prefix}{name}"
            for name in ("seq", "order", "owners", "due", "expired", "expired-seq")
        ]
        self._script = self._client.register_script(_SCRIPT)
        self._service = RedisService(TaskStoreError)
        self._open = False
        #: Task id -> the event its current waiters park on; set (and dropped)
        #: by the listener when the task changes.
        self._changed: dict[str, trio.Event] = {}
        #: Task id -> how many wait_changed calls watch it (its event goes with the last).
        self._watchers: dict[str, int] = {}
        self._waiting = 0
        self._messages = 0
        self._resubscriptions = 0

    @property
    def is_open(self) -> bool:
        """Whether the store has been entered and not left (it can be used)."""
        return self._service.is_open

    # -- the store's life: client, subscription, listener

    async def __aenter__(self) -> Self:
        await self._service.open(self._serve, "RedisTaskStore")
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
        """Open the client (for a URL) and the subscription, run the listener
        until the store is closed, then close them in order."""
        # connected() PINGs first, so an unreachable Redis fails at once (the
        # subscription would retry forever; once made, it reconnects by
        # itself). Entering the pubsub waits for the subscription's
        # acknowledgement: no waiter registers before changes reach the
        # listener.
        async with (
            self._service.connected(
                self._client, self._owns_client, _PING_FAILED, TaskStoreUnavailable
            ) as scope,
            self._client.pubsub(channels=[self._channel]) as pubsub,
        ):
            async with trio.open_nursery() as listener:
                listener.start_soon(self._listen, pubsub)
                # Open now, and shielded: a cancellation of the body
                # around the store ends it through its exit, in order
                # (unsubscribe, then close), rather than tearing
                # coredis's tasks down all at once (its clean-up then
                # trips on its own closed connection).
                scope.shield = True
                self._open = True
                task_status.started()
                try:
                    await stop.wait()
                finally:
                    self._open = False
                    listener.cancel_scope.cancel()
            # Unsubscribed here, coredis's own exit has nothing left to
            # wait for; if the connection is gone, nothing is left at all.
            with suppress(*_CONNECTION_GONE):
                await pubsub.unsubscribe()

    async def _listen(self, pubsub: coredis.patterns.pubsub.PubSub[bytes]) -> None:
        subscribed = False
        while True:
            # Not ``async for``: coredis's iterator ends while it subscribes
            # again after a lost connection; get_message waits through that.
            message = await pubsub.get_message()
            if message is None:
                continue
            kind = message["type"]
            if kind == "message":
                self._messages += 1
                data = message["data"]
                task_id = data.decode() if isinstance(data, bytes) else str(data)
                event = self._changed.pop(task_id, None)
                if event is not None:
                    event.set()
            elif kind == "subscribe":
                if subscribed:
                    # Made again after a lost connection: changes may have been
                    # published meanwhile, so every waiter looks again.
                    self._resubscriptions += 1
                    events, self._changed = self._changed, {}
                    for event in events.values():
                        event.set()
                subscribed = True

    async def _call(self, op: str, now: float, *args: str | bytes) -> Any:
        if not self._open:
            raise TaskStoreError(
                "the RedisTaskStore is not open: use 'async with RedisTaskStore(...)'"
            )
        remember = self.remember_expired > 0 and self.max_remembered > 0
        head: list[str | bytes] = [
            op,
            self.prefix,
            _number(now),
            _number(now - self.remember_expired),
            "1" if remember else "0",
            _milliseconds(self.remember_expired + self.key_margin),
            str(self.max_remembered),
        ]
        try:
            return await self._script(keys=self._keys, args=[*head, *args])
        except (coredis.exceptions.RedisError, TimeoutError) as error:
            raise TaskStoreUnavailable(f"task store {op} failed: {error}") from error

    async def _write(self, op: str, now: float, *args: str | bytes) -> Any:
        """A script that writes: cancellable until sent, then shielded to its reply."""
        await trio.lowlevel.checkpoint_if_cancelled()
        with trio.CancelScope(shield=True):
            return await self._call(op, now, *args)

    def _expiry(self, record: TaskRecord, now: float) -> tuple[str, str]:
        """The due score and the key's PX for *record*; ('', '') without a ttl."""
        expires_at = record.expires_at
        if expires_at is None:
            return "", ""
        return _number(expires_at), _milliseconds(expires_at - now + self.key_margin)

    # -- the TaskStore methods

    async def create(self, record: TaskRecord, owner: Owner) -> None:
        """See :meth:`TaskStore.create <trio_mcp.tasks.TaskStore.create>`. Atomic: the
        duplicate check (held or remembered as expired), the bounds (after dropping
        expired tasks) and the write are one script. Cancelled, the task was not
        created; returned, it was.

        Spec: TK-07, TK-18.
        """
        encoded_owner = _encode_owner(owner)
        now = self.clock()
        due, px = self._expiry(record, now)
        reply = await self._write(
            "create",
            now,
            record.task_id,
            encode_record(record),
            encoded_owner,
            due,
            px,
            str(self.max_tasks),
            str(self.max_tasks_per_owner),
        )
        if reply[0] == b"exists":
            raise TaskExists(f"task id {record.task_id!r} is already in use")
        if reply[0] == b"limit":
            bound = reply[1].decode()
            raise TaskLimitExceeded(
                bound, self.max_tasks if bound == "max_tasks" else self.max_tasks_per_owner
            )

    async def get(self, task_id: str, owner: Owner) -> TaskRecord | None:
        """See :meth:`TaskStore.get <trio_mcp.tasks.TaskStore.get>` (another owner's
        task answers None). Cancellable; may drop the task if it is due.

        Spec: TK-18.
        """
        await trio.lowlevel.checkpoint()
        raw = await self._call("get", self.clock(), task_id, _encode_owner(owner))
        return None if raw is None else decode_record(raw)

    async def expired(self, task_id: str, owner: Owner) -> bool:
        """See :meth:`TaskStore.expired <trio_mcp.tasks.TaskStore.expired>`.
        Cancellable.

        Spec: TK-17.
        """
        await trio.lowlevel.checkpoint()
        return bool(await self._call("expired", self.clock(), task_id, _encode_owner(owner)))

    async def update(
        self, task_id: str, expected: TaskRecord, new_record: TaskRecord
    ) -> TaskRecord:
        """See :meth:`TaskStore.update <trio_mcp.tasks.TaskStore.update>`. Atomic
        compare-and-set of the whole record (the stored bytes against *expected*'s,
        then, if they differ, the decoded record against *expected*). Cancelled, nothing
        was written; returned, the write is done."""
        if new_record.task_id != task_id or expected.task_id != task_id:
            raise ValueError(f"an update of task {task_id!r} must carry its records")
        await trio.lowlevel.checkpoint_if_cancelled()
        with trio.CancelScope(shield=True):
            await self._compare_and_set(task_id, expected, new_record)
        return new_record

    async def _compare_and_set(
        self, task_id: str, expected: TaskRecord, new_record: TaskRecord
    ) -> None:
        new_raw = encode_record(new_record)
        expected_raw = encode_record(expected)
        while True:
            now = self.clock()
            due, px = self._expiry(new_record, now)
            reply = await self._call("update", now, task_id, expected_raw, new_raw, due, px)
            if reply[0] == b"ok":
                return
            if reply[0] == b"unknown":
                raise UnknownTask(task_id)
            current = decode_record(reply[1])
            if current != expected:
                raise TaskConflict(current)
            # Equal records written differently (1 and 1.0): compare against
            # the stored bytes. Each round either writes or meets other bytes.
            expected_raw = reply[1]

    async def delete(self, task_id: str) -> TaskRecord | None:
        """See :meth:`TaskStore.delete <trio_mcp.tasks.TaskStore.delete>`. Atomic;
        cancelled, nothing was removed; returned, it was."""
        raw = await self._write("delete", self.clock(), task_id)
        return None if raw is None else decode_record(raw)

    async def list(
        self, owner: Owner, cursor: str | None, limit: int
    ) -> tuple[Sequence[TaskRecord], str | None]:
        """See :meth:`TaskStore.list <trio_mcp.tasks.TaskStore.list>`. One script:
        expired tasks are dropped, then the page is read, so a page is a consistent
        view. Cancellable.

        Spec: TK-15, TK-17, TK-18.
        """
        await trio.lowlevel.checkpoint()
        if limit < 1:
            raise ValueError("limit must be at least 1")
        after = 0
        if cursor is not None:
            after = _decode_cursor(cursor)
            if after < 1:
                raise InvalidCursor(f"invalid cursor {cursor!r}")
        reply = await self._call("list", self.clock(), _encode_owner(owner), str(after), str(limit))
        if reply[0] == b"invalid":
            raise InvalidCursor(f"invalid cursor {cursor!r}")
        records = [decode_record(raw) for raw in reply[2:] if raw is not None]
        next_cursor = _encode_cursor(int(reply[1])) if reply[1] else None
        return records, next_cursor

    async def wait_changed(self, task_id: str, seen: TaskRecord) -> TaskRecord | None:
        """See :meth:`TaskStore.wait_changed <trio_mcp.tasks.TaskStore.wait_changed>`:
        woken by a change published by any process, by the task's removal, and when its
        ttl is due by the store's clock. Cancellable at any point; the store is
        unchanged and the waiter's event unregistered.

        Spec: TK-12, TK-14.
        """
        await trio.lowlevel.checkpoint()
        self._watchers[task_id] = self._watchers.get(task_id, 0) + 1
        try:
            while True:
                # Watch first, read second: a change after the read publishes
                # after it, and sets this event even before we wait on it.
                event = self._changed.get(task_id)
                if event is None:
                    event = self._changed[task_id] = trio.Event()
                now = self.clock()
                raw = await self._call("peek", now, task_id)
                if raw is None:
                    return None
                record = decode_record(raw)
                if record != seen:
                    return record
                expires_at = record.expires_at
                timeout = math.inf if expires_at is None else max(0.0, expires_at - now)
                self._waiting += 1
                try:
                    with trio.move_on_after(timeout):
                        await event.wait()
                finally:
                    self._waiting -= 1
        finally:
            left = self._watchers[task_id] - 1
            if left:
                self._watchers[task_id] = left
            else:
                del self._watchers[task_id]
                self._changed.pop(task_id, None)

    async def expire_due(self, now: float | None = None) -> Sequence[TaskRecord]:
        """See :meth:`TaskStore.expire_due <trio_mcp.tasks.TaskStore.expire_due>`. One
        script drops every due task, oldest first, and forgets the remembered ids past
        ``remember_expired``; the ``EXPIRE`` snapshots of the running ones are computed
        here from their last records. Cancelled, nothing was dropped; returned, all of
        them were.

        Spec: TK-10, TK-18.
        """
        when = self.clock() if now is None else now
        raws = await self._write("expire_due", when)
        return [expire_task(decode_record(raw), when) for raw in raws]

    # -- beyond the protocol

    async def count(self) -> int:
        """Tasks held under the prefix, by every process (expired ones not yet
        dropped included): the memory store's ``len``.

        Cancellation: a read; nothing to undo.
        """
        await trio.lowlevel.checkpoint()
        if not self._open:
            raise TaskStoreError(
                "the RedisTaskStore is not open: use 'async with RedisTaskStore(...)'"
            )
        try:
            return await self._client.zcard(self._keys[1])
        except (coredis.exceptions.RedisError, TimeoutError) as error:
            raise TaskStoreUnavailable(f"task store count failed: {error}") from error

    def statistics(self) -> RedisTaskStoreStatistics:
        """What this store object sees now (waiters, messages, resubscriptions)."""
        return RedisTaskStoreStatistics(
            waiting=self._waiting,
            messages=self._messages,
            resubscriptions=self._resubscriptions,
            watched=len(self._watchers),
        )
