"""What one side may send: the checks of an outbound request or notification.

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
"""

from __future__ import annotations

from ._era import Side
from ._errors import LocalProtocolError
from ._lifecycle import Lifecycle, SessionState
from ._messages import JSONObject
from ._methods import Kind, MethodSpec, custom_method, lookup


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
