"""The handshake era (2024-11-05 .. 2025-11-25), as one side of a connection sees it.

Theory of operation
-------------------
In the handshake era a session opens with ``initialize`` and its answer, after
which both sides may send requests (``basic/lifecycle``):

1. the client sends ``initialize`` with the newest version it speaks, its
   capabilities and its ``clientInfo`` (LC-02, LC-07), and nothing but
   ``ping`` until the answer (LC-05); :meth:`HandshakeEra.initialize_params`;
2. the server picks the version (the client's if it speaks it, else its own
   newest, LC-08) and answers with it, its capabilities and ``serverInfo``
   (LC-03); :meth:`HandshakeEra.accept_initialize`. Writing that answer moves
   it on; an error answer lets the client try again
   (:meth:`HandshakeEra.initialize_answered`);
3. the client accepts the answer only in a version it speaks (LC-09) and sends
   ``notifications/initialized`` (:meth:`HandshakeEra.complete`); the server
   operates from its arrival (:meth:`HandshakeEra.receive_initialized`), and
   accepts requests as soon as its answer is out (A-04).

A stateless Streamable HTTP POST skips the handshake: it is served as in an
initialized session of the revision it names (HT-36,
:meth:`HandshakeEra.start_stateless`).

An inbound request is checked in this order (:meth:`HandshakeEra.check_request`),
after the connection's duplicate-id check and before the checks both eras
share (the capability gate, the params, the progress token):

1. ``initialize`` to a server that speaks no handshake-era version: -32022
   naming what it speaks (VR-13);
2. the method: unknown, a notification, absent from the negotiated revision,
   of 2026-07-28 alone before the era is decided, or sent the wrong way: -32601;
3. the lifecycle: only ``ping`` (and ``initialize``, once, never batched) before
   the handshake ends: -32600 (LC-05, LC-06, LC-12).

2025-11-25 has tasks as a utility: a request's ``task`` param asks for one
(TK-11), its result is then a task, and a task's progress keeps its request's
token for the task's whole life (:meth:`HandshakeEra.task_progress`).

The era changes nothing but the :class:`~trio_mcp.protocol.Lifecycle` it is
given: the connection records the version and the peer it returns.
"""

from __future__ import annotations

import functools
from typing import Any

from .. import types as mcp_types
from ._era import MODERN_ONLY, Admission, Peer, Side
from ._errors import ErrorCode, LocalProtocolError, UnsupportedProtocolVersion
from ._lifecycle import Lifecycle, LifecycleEvent, Role, SessionState
from ._messages import ErrorObject, JSONObject, Notification, Request
from ._methods import JSON_OBJECT, METHODS, Kind, lookup
from ._requests import RequestEntry
from ._revisions import Revision, handshake_versions, negotiate_version

#: Inbound requests (method, state, version, batched, our role) that passed the
#: method and lifecycle checks of :meth:`HandshakeEra.check_request`. Those
#: checks read nothing else (METHODS and the lifecycle tables are static), so
#: one cache serves every session: bounded by the methods table, and no
#: per-session dict.
_INBOUND_OK: dict[tuple[str, SessionState, str | None, bool, Role], Admission] = {}


#: Our handshake-era versions per set of versions spoken: one tuple shared by
#: every connection that speaks the same set (bounded by the revision table).
_handshake_versions = functools.cache(handshake_versions)


class HandshakeEra:
    """The handshake era's rules for one side of one connection.

    Args:
        side: this end of the connection.
        lifecycle: the connection's lifecycle, which the handshake moves.
    """

    __slots__ = ("_lifecycle", "_side", "versions")

    def __init__(self, side: Side, lifecycle: Lifecycle) -> None:
        self._side = side
        self._lifecycle = lifecycle
        #: Our handshake-era versions, newest first.
        self.versions = _handshake_versions(side.supported_versions)

    # What the connection asks of the era in force (see Era), read on every
    # message: plain class attributes, not properties.

    #: Both sides answer requests in the handshake era.
    silent = False
    #: A handshake-era request carries no per-request ``_meta``.
    request_meta = None

    # ------------------------------------------------------------ 1. initialize

    def initialize_params(self, version: str | None = None) -> JSONObject:
        """Client: the params of ``initialize`` (LC-02, LC-07: *version*, by
        default our newest handshake-era version).

        Raises:
            LocalProtocolError: we speak no handshake-era version.
        """
        if version is None and not self.versions:
            raise LocalProtocolError("no handshake-era version to offer in initialize")
        return {
            "protocolVersion": version or self.versions[0],
            "capabilities": self._side.capabilities,
            "clientInfo": self._side.info,
        }

    def send_initialize(self) -> None:
        """Client: ``initialize`` is being sent (once).

        Raises:
            LocalProtocolError: it was sent before, or this is a server.
        """
        lifecycle = self._lifecycle
        if not lifecycle.accepts(LifecycleEvent.SEND_INITIALIZE):
            raise LocalProtocolError("initialize may only be sent once, by the client")
        lifecycle.process(LifecycleEvent.SEND_INITIALIZE)

    # ----------------------------------------------------- the checks, in order

    def check_request(
        self, request: Request, batched: bool, version: str | None
    ) -> Admission | ErrorObject:
        """The handshake era's checks of an inbound request (see the module).

        The method and lifecycle checks read only the method, the state, the
        revision and our role: a pass is cached per (method, state, revision,
        batched) and role, in a cache all sessions share.
        """
        method = request.method
        role = self._side.role
        if method == "initialize" and role is Role.SERVER and not self.versions:
            return self._refuse_initialize(request)
        lifecycle = self._lifecycle
        key = (method, lifecycle.state, version, batched, role)
        admission = _INBOUND_OK.get(key)
        if admission is None:
            spec = METHODS.get(method)
            # A custom method's pass is never cached: the cache is shared by
            # every session, and custom methods are a connection's own.
            custom = spec is None and method in self._side.custom
            if custom:
                spec = self._side.custom[method]
            if (
                spec is None
                or spec.kind is not Kind.REQUEST
                or not spec.exists_in(version)
                # Before the handshake: a method of no handshake-era revision
                # (server/discover to a handshake-only server) is unknown here.
                or (version is None and method in MODERN_ONLY)
                or not spec.sender.allows(role.peer)
            ):
                return ErrorObject(int(ErrorCode.METHOD_NOT_FOUND), f"Method not found: {method}")
            refusal = lifecycle.request_refusal(method, batched=batched)
            if refusal is not None:
                return ErrorObject(int(ErrorCode.INVALID_REQUEST), refusal)
            opens = LifecycleEvent.RECV_INITIALIZE if method == "initialize" else None
            admission = Admission(spec, version, None, opens)
            if not custom:
                _INBOUND_OK[key] = admission
        return admission

    def _refuse_initialize(self, request: Request) -> ErrorObject:
        """A modern-only server's answer to ``initialize``: -32022 naming the
        versions it speaks, so a handshake-era client fails at once (VR-13)."""
        params = request.params or {}
        requested = params.get("protocolVersion")
        return ErrorObject(
            int(ErrorCode.UNSUPPORTED_PROTOCOL_VERSION),
            "This server does not accept initialize: it speaks only "
            + ", ".join(self._side.supported_versions),
            {
                "supported": list(self._side.supported_versions),
                "requested": requested if isinstance(requested, str) else None,
            },
        )

    # ------------------------------------------------------ 2. the server answers

    def accept_initialize(
        self, params: mcp_types.InitializeRequestParams
    ) -> tuple[str, Peer, JSONObject]:
        """Server: negotiate (LC-08) and build the initialize result (LC-03).

        Returns the version chosen, the client as it declared itself, and the
        result."""
        side = self._side
        version = negotiate_version(params.protocol_version, self.versions)
        peer = Peer(
            side.converter.unstructure(params.capabilities),
            side.converter.unstructure(params.client_info),
            None,
        )
        result: JSONObject = {
            "protocolVersion": version,
            "capabilities": side.capabilities,
            "serverInfo": side.info,
        }
        if side.instructions is not None:
            result["instructions"] = side.instructions
        return version, peer, result

    def initialize_answered(self, succeeded: bool) -> None:
        """Server: the answer to ``initialize`` is being written."""
        event = LifecycleEvent.SEND_INIT_RESULT if succeeded else LifecycleEvent.SEND_INIT_ERROR
        # A session closed while the answer waited in the queue stays closed.
        if self._lifecycle.accepts(event):
            self._lifecycle.process(event)

    # ------------------------------------------------- 3. the client completes it

    def complete(self, result: mcp_types.InitializeResult) -> Peer:
        """Client: accept the initialize result (LC-09); the connection then
        sends ``notifications/initialized``. Returns the server as it
        declared itself.

        Raises:
            UnsupportedProtocolVersion: the server chose a version we do not speak.
            LocalProtocolError: no ``initialize`` of ours awaits its result.
        """
        version = result.protocol_version
        if version not in self.versions:
            raise UnsupportedProtocolVersion(version, self.versions)
        self._lifecycle.process(LifecycleEvent.RECV_INIT_RESULT)
        converter = self._side.converter
        return Peer(
            converter.unstructure(result.capabilities),
            converter.unstructure(result.server_info),
            result.instructions,
        )

    def initialize_refused(self) -> None:
        """Client: the server answered ``initialize`` with an error; the client
        may try again, or (VR-13) go modern."""
        if self._lifecycle.accepts(LifecycleEvent.RECV_INIT_ERROR):
            self._lifecycle.process(LifecycleEvent.RECV_INIT_ERROR)

    def receive_initialized(self) -> str | None:
        """Server: ``notifications/initialized`` arrived; why it is ignored, or
        None when it ends the handshake."""
        lifecycle = self._lifecycle
        if not lifecycle.accepts(LifecycleEvent.RECV_INITIALIZED):
            return f"notifications/initialized in state {lifecycle.state.value}"
        lifecycle.process(LifecycleEvent.RECV_INITIALIZED)
        return None

    # ---------------------------------------------------- without a handshake

    def start_stateless(self, version: str) -> None:
        """Server: one stateless exchange of *version*, as in an initialized
        session of that revision (HT-36): NEW straight to OPERATING.

        Raises:
            LocalProtocolError: not a new server connection, or *version* is
                not one of our handshake-era versions.
        """
        if not self._lifecycle.accepts(LifecycleEvent.START_STATELESS):
            raise LocalProtocolError("start_stateless needs a new server connection")
        if version not in self.versions:
            raise LocalProtocolError(f"unsupported protocol version {version!r}")
        self._lifecycle.process(LifecycleEvent.START_STATELESS)

    # ------------------------------------------------------- 2025-11-25 tasks

    def asks_for_task(self, raw: JSONObject, revision: Revision | None) -> bool:
        """Whether outbound params *raw* let the peer answer with a task: in
        2025-11-25, they carry ``task`` (TK-11)."""
        return revision is not None and revision.tasks_utility and isinstance(raw.get("task"), dict)

    def result_type(self, entry: RequestEntry, result: JSONObject) -> Any:
        """The type of outbound request *entry*'s result: a task when it asked
        for one and the receiver made it one (TK-11). A receiver that does not
        support tasks answers as usual, ignoring ``task`` (TK-05)."""
        if entry.task_allowed and "task" in result:
            return mcp_types.CreateTaskResult
        spec = lookup(entry.method, self._side.custom)
        return JSON_OBJECT if spec is None else spec.result_type

    def task_progress(
        self,
        revision: Revision | None,
        token: str | int,
        progress: float,
        total: float | None,
        message: str | None,
        meta: JSONObject | None,
    ) -> Notification:
        """Progress for a 2025-11-25 task whose request carried *token*: that
        token stays valid for the task's whole life, past the request's end
        (``basic/utilities/tasks``, "Task Progress Notifications"), so PG-10
        does not apply. *meta* is the related-task ``_meta`` (TK-13).

        Raises:
            LocalProtocolError: *revision* has no tasks.
        """
        if revision is None or not revision.tasks_utility:
            raise LocalProtocolError("task progress exists only where tasks do (2025-11-25)")
        params: JSONObject = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        if meta is not None:
            params["_meta"] = meta
        return Notification("notifications/progress", params)
