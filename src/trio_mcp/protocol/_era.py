"""What a protocol era is to a :class:`~trio_mcp.protocol.Connection`.

Theory of operation
-------------------
trio_mcp speaks two eras: the handshake era (2024-11-05 .. 2025-11-25:
``initialize``, a session, requests both ways) and 2026-07-28 (no handshake,
every request carrying its version and the client's capabilities in ``_meta``).
A connection holds one object per era, :class:`~._handshake.HandshakeEra` and
:class:`~._modern.ModernEra`, and keeps the one its opening chose in ``_era``,
as h11's ``Connection`` re-picks its reader and writer when its state changes:
the handshake's until the first message decides otherwise (the client's
``START_MODERN``, the server's ``RECV_MODERN``, or a stateless 2026-07-28 POST
whose transport decided it: ``Connection.start_stateless``).

:class:`Era` is what the connection asks of the era in force: how an inbound
request is checked before the checks both eras share (the capability gate, the
params, the progress token), what every outbound request carries in ``_meta``,
whether outbound params let the peer answer with a task, and into which type a
result is read. The era objects hold what they need, given at construction;
they never see the connection. They decide, and return what they decided
(an :class:`Admission`, a :class:`Peer`, an :class:`ErrorObject`); the
connection records it.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, NamedTuple, Protocol

import cattrs

from ._lifecycle import LifecycleEvent, Role
from ._messages import ErrorObject, JSONObject, Request
from ._methods import METHODS, MethodSpec
from ._requests import RequestEntry
from ._revisions import ALL_VERSIONS, Revision, handshake_versions

#: Methods that exist only in 2026-07-28: they open that era even without
#: ``_meta`` (and are then refused for the missing fields, ME-07), and the
#: handshake era does not know them before its version is negotiated.
MODERN_ONLY = frozenset(
    name
    for name, spec in METHODS.items()
    if not spec.revisions & set(handshake_versions(ALL_VERSIONS))
)


#: The custom methods of a connection that has none.
NO_CUSTOM_METHODS: Mapping[str, MethodSpec] = MappingProxyType({})


class Side(NamedTuple):
    """This end of a connection, as both eras read it: fixed at construction."""

    role: Role
    #: What this side declares (kept as given: many sessions may share it).
    capabilities: JSONObject
    #: This side's ``Implementation`` object (``clientInfo``/``serverInfo``).
    info: JSONObject
    #: Server: the instructions sent in the initialize and discover results.
    instructions: str | None
    #: Every version we speak, newest first (both eras).
    supported_versions: tuple[str, ...]
    #: The cattrs converter of params, results and the peer's declarations.
    converter: cattrs.Converter
    #: The methods outside the core set this side handles (custom methods and
    #: extensions' methods), by name; empty for most connections.
    custom: Mapping[str, MethodSpec] = NO_CUSTOM_METHODS


class Admission(NamedTuple):
    """An inbound request that passed its era's checks."""

    #: The method's row in :data:`~trio_mcp.protocol.METHODS`.
    spec: MethodSpec
    #: The revision its params are read in (None: not negotiated yet).
    version: str | None
    #: 2026-07-28: what its ``_meta`` declared (version, client capabilities,
    #: ``clientInfo``, ``logLevel``); None in the handshake era.
    envelope: tuple[str, dict[str, Any], dict[str, Any] | None, str | None] | None
    #: The lifecycle event accepting it makes (``initialize``: RECV_INITIALIZE;
    #: a first 2026-07-28 request: RECV_MODERN), once the shared checks pass.
    opens: LifecycleEvent | None


class Peer(NamedTuple):
    """What the peer declared about itself when the era was decided."""

    capabilities: JSONObject
    info: JSONObject
    instructions: str | None


#: The peer of a connection whose era is not decided yet.
UNKNOWN_PEER = Peer({}, {}, None)


class Era(Protocol):
    """The rules of one era, as the connection asks for them."""

    @property
    def silent(self) -> bool:
        """Whether this side writes no responses at all (a 2026-07-28 client:
        servers send no requests there, and even an error would be a
        response, PT-01, SI-07)."""
        ...

    @property
    def request_meta(self) -> JSONObject | None:
        """The ``_meta`` every outbound request carries (a 2026-07-28 client's
        version, capabilities and ``clientInfo``, ME-06), or None."""
        ...

    def check_request(
        self, request: Request, batched: bool, version: str | None
    ) -> Admission | ErrorObject:
        """The era's checks of an inbound request (the negotiated *version*,
        if any), in the spec's order: its admission, or the refusal to answer
        it with."""
        ...

    def asks_for_task(self, raw: JSONObject, revision: Revision | None) -> bool:
        """Whether outbound params *raw* let the peer answer with a task (TK-11)."""
        ...

    def result_type(self, entry: RequestEntry, result: JSONObject) -> Any:
        """The type the result of outbound request *entry* is read into, or the
        :class:`ErrorObject` the call fails with (a result its era forbids)."""
        ...
