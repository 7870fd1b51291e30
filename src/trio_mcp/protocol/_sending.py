"""What one side sends: the checks of an outbound request or notification,
and the messages made once they pass.

Theory of operation
-------------------
Before a request or notification of ours gets an id or a record, the
connection asks :class:`SendChecks` whether it may be sent at all, in both
eras, and refuses it with :class:`~trio_mcp.protocol.LocalProtocolError`
otherwise (our own bug, never the peer's):

1. the method is in :data:`~trio_mcp.protocol.METHODS`, of the right kind
   (request or notification), sent by our role, and exists in the negotiated
   revision;
2. once the session operates, a method gated by a capability of the peer
   needs the peer to have declared it (LC-11);
3. a notification gated by a capability of ours (list changes, resource
   updates, log messages, roots changes) needs us to have declared it (LC-11).

The lifecycle's own permissions (LC-05, LC-06) are the
:class:`~trio_mcp.protocol.Lifecycle`'s, checked by the connection next.

Then :class:`OutboundMessages` makes the message: a request gets the next id
(never reused), the era's ``_meta`` and its progress token, is serialized at
once (params that are not JSON fail the caller, before an id or a record is
spent, and never the writer) and gets its QUEUED record in the book.
"""

from __future__ import annotations

from typing import Any

from ._book import RequestBook
from ._codec import encode
from ._era import Era, Side
from ._errors import LocalProtocolError
from ._lifecycle import Lifecycle, SessionState
from ._messages import JSONObject, Notification, Request, RequestId
from ._methods import Kind, MethodSpec, custom_method, lookup
from ._requests import Direction, RequestEntry, RequestState
from ._revisions import Revision


class SendChecks:
    """The checks of what one side of one connection sends (see the module).

    Args:
        side: this end of the connection (its role and capabilities).
        lifecycle: the connection's lifecycle (its state is read).
    """

    __slots__ = ("_lifecycle", "_passed", "_side")

    def __init__(self, side: Side, lifecycle: Lifecycle) -> None:
        self._side = side
        self._lifecycle = lifecycle
        # Requests (method, state, version) that passed; made with the first
        # (many a server session never sends a request).
        self._passed: dict[tuple[str, SessionState, str | None], MethodSpec] | None = None

    def check(
        self,
        method: str,
        kind: Kind,
        version: str | None,
        peer_capabilities: JSONObject,
        *,
        custom: bool = False,
    ) -> MethodSpec:
        """The row of *method*, which this side may send as a *kind* in the
        negotiated *version*, to a peer that declared *peer_capabilities*.
        With *custom*, a method outside both the core set and this side's own
        custom methods is the peer's custom method: sent as JSON.

        Raises:
            LocalProtocolError: it may not.
        """
        if custom and lookup(method, self._side.custom) is None:
            return self._check_custom(method, kind)
        if kind is not Kind.REQUEST:
            return self._check(method, kind, version, peer_capabilities)
        # What the checks of a request read (the revision, the peer's
        # capabilities) only changes together with the lifecycle state, so a
        # pass is cached per state. (Notifications also read our own
        # capabilities, which the owner may change: never cached.)
        passed = self._passed
        if passed is None:
            passed = self._passed = {}
        key = (method, self._lifecycle.state, version)
        spec = passed.get(key)
        if spec is None:
            spec = passed[key] = self._check(method, kind, version, peer_capabilities)
        return spec

    def _check_custom(self, method: str, kind: Kind) -> MethodSpec:
        """The row of a custom method of the peer's: JSON both ways; the
        lifecycle's rules still apply (no server-to-client request in
        2026-07-28)."""
        if not method or method.startswith("rpc."):
            raise LocalProtocolError(f"{method!r} is not a method name one may define")
        return custom_method(method, kind)

    def _check(
        self, method: str, kind: Kind, version: str | None, peer_capabilities: JSONObject
    ) -> MethodSpec:
        role = self._side.role
        spec = lookup(method, self._side.custom)
        if spec is None or spec.kind is not kind:
            raise LocalProtocolError(f"unknown {kind.value} method {method!r}")
        if not spec.sender.allows(role):
            raise LocalProtocolError(f"a {role.value} does not send {method!r}")
        if not spec.exists_in(version):
            raise LocalProtocolError(f"{method!r} does not exist in revision {version}")
        gate = spec.gate(version)
        state = self._lifecycle.state
        if (
            gate is not None
            and gate.held_by(role.peer, receiving=kind is Kind.REQUEST)
            and (state is SessionState.OPERATING or state is SessionState.MODERN)
            and not gate.declared_in(peer_capabilities)
        ):
            raise LocalProtocolError(f"{method!r} needs the {gate}, which the peer did not declare")
        if (
            gate is not None
            and gate.holder is role
            and kind is Kind.NOTIFICATION
            and not gate.declared_in(self._side.capabilities)
        ):
            # A notification gated by our own capability may only be sent
            # when we declared it (LC-11).
            raise LocalProtocolError(f"{method!r} needs the {gate}, which we did not declare")
        return spec


class OutboundMessages:
    """The requests and notifications of one side, made once checked (see
    the module): the ids, the ``_meta``, the records.

    Args:
        side: this end of the connection (its converter).
        book: the connection's requests (each request's record goes there).
    """

    __slots__ = ("_book", "_converter", "_next_id")

    def __init__(self, side: Side, book: RequestBook) -> None:
        self._book = book
        self._converter = side.converter
        self._next_id = 1

    def request(
        self,
        method: str,
        spec: MethodSpec,
        params: Any,
        era: Era,
        revision: Revision | None,
        *,
        want_progress: bool,
        follows: RequestId | None,
    ) -> Request:
        """The request *method* (its row: *spec*) with *params*, in *era*, and its QUEUED
        record (see :meth:`Connection.send_request`).

        Raises:
            LocalProtocolError: *params* are not JSON.
        """
        request_id = self._next_id
        raw = self.to_json(params)
        request_meta = era.request_meta
        if want_progress or request_meta is not None:
            # Fresh dicts for the params and their _meta, built by unpacking
            # (one lookup, no update call): the caller's dicts and
            # our constant _meta are never written to, and no two requests
            # share a _meta dict. The values inside are shared as before: the
            # capabilities are the connection's own, live (ME-06).
            raw = {**raw} if raw else {}
            own = raw.get("_meta")
            if own:
                meta = {**request_meta, **own} if request_meta is not None else {**own}
            else:
                meta = {**request_meta} if request_meta is not None else {}
            if want_progress:
                meta["progressToken"] = request_id
            raw["_meta"] = meta
        request = Request(request_id, method, raw)
        # Serialized now, not by the writer: params that are not JSON fail the
        # caller here, before an id or a record is spent, and can never take
        # the writer (and the session) down.
        data = encode(request)
        self._next_id += 1
        book = self._book
        entry = RequestEntry(
            request_id,
            method,
            Direction.OUTBOUND,
            book.clock(),
            request_id if want_progress else None,
        )
        entry.encoded = data
        entry.follows = follows
        if spec.task_augmentable and raw:
            entry.task_allowed = era.asks_for_task(raw, revision)
        book.add_outbound(entry)
        return request

    def notification(self, method: str, params: Any) -> Notification:
        """The notification *method* with *params*.

        Raises:
            LocalProtocolError: *params* are not JSON.
        """
        note = Notification(method, self.to_json(params))
        encode(note)  # not JSON: the caller's error, never the writer's (H-07)
        return note

    def rewrite(self, request: Request, params: JSONObject | None) -> Request:
        """*request*, still QUEUED, with new *params* (see
        :meth:`Connection.rewrite_request`).

        Raises:
            LocalProtocolError: the request is no longer QUEUED, or *params*
                are not JSON.
        """
        entry = self._book.outbound_entry(request.id)
        if entry is None or entry.state is not RequestState.QUEUED:
            raise LocalProtocolError(f"rewrite_request() for {request.id!r}, which is not queued")
        rewritten = Request(request.id, request.method, params)
        entry.encoded = encode(rewritten)
        return rewritten

    def to_json(self, value: Any) -> JSONObject | None:
        """*value* (an attrs instance, a JSON object or None) in its wire
        form, with the side's converter."""
        if value is None or isinstance(value, dict):
            return value
        return self._converter.unstructure(value)  # type: ignore[no-any-return]
