"""The revision table: one frozen record per published MCP revision.

Theory of operation
-------------------
Every behaviour that differs between revisions is a field of :class:`Revision`,
and code reads it from the negotiated record (``connection.revision.batches``),
never by comparing version strings. A revision is added by writing one more
record (its changes from the one before) and putting it in :data:`REVISIONS`,
newest first; the modern era (2026-07-28: no handshake, per-request ``_meta``)
comes in as a record with ``era=Era.MODERN`` and the fields that era adds.

What a *method* does per revision (whether it exists, which capability gates
it) is data about methods and stays in :data:`~trio_mcp.protocol.METHODS`, which
names revisions through the constants below.

Spec: LC-07, LC-08 (version negotiation), BP-18 (batches), HT-36 (the revision
assumed without an ``MCP-Protocol-Version`` header), VR-01, VR-02, VR-08,
VR-09 (the modern era and the dual-era server), §29.
"""

from __future__ import annotations

import enum
import functools
from typing import Final

import attrs


class Era(enum.Enum):
    """How a revision starts a session."""

    #: ``initialize`` / ``notifications/initialized``, then a stateful session.
    HANDSHAKE = "handshake"
    #: No handshake: every request carries its version and capabilities.
    MODERN = "modern"


@attrs.frozen(eq=False)
class Revision:
    """What one revision of the protocol does differently.

    Compared and hashed by identity: there is one record per revision.
    """

    #: The version string the handshake and ``MCP-Protocol-Version`` carry.
    version: str
    era: Era
    #: Receivers must accept JSON-RPC batches.
    #:
    #: Spec: BP-18.
    batches: bool
    #: Tools declare ``outputSchema`` and results carry ``structuredContent``.
    #:
    #: Spec: TL-07, TL-08.
    structured_output: bool
    #: Tool and prompt definitions carry ``title`` and ``icons``.
    display_metadata: bool
    #: ``notifications/progress`` carries a ``message``.
    #:
    #: Spec: PG-06.
    progress_message: bool
    #: URL-mode elicitation and its error -32042 exist.
    #:
    #: Spec: EL-10.
    url_elicitation: bool
    #: ``completion/complete`` carries ``context.arguments``.
    #:
    #: Spec: CP-03.
    completion_context: bool
    #: A resumable Streamable HTTP server opens each SSE stream with a priming event.
    #:
    #: Spec: HT-10.
    sse_priming: bool
    #: The server may send JSON-RPC requests (sampling, roots, elicitation); without, it
    #: asks through input-required results.
    #:
    #: Spec: PT-01, PT-03.
    server_requests: bool = True
    #: ``ping`` exists, and so does the keepalive built on it.
    #:
    #: Spec: PI-01.
    ping: bool = True
    #: Every result carries ``resultType`` and the server's ``serverInfo`` in ``_meta``.
    #:
    #: Spec: ME-11, A-21.
    result_type: bool = False
    #: ``tools/call``, ``resources/read`` and ``prompts/get`` may answer with an
    #: ``InputRequiredResult``.
    #:
    #: Spec: PT-03, PT-04.
    input_required: bool = False
    #: Cacheable results carry ``ttlMs`` and ``cacheScope``.
    #:
    #: Spec: CA-01.
    cache_hints: bool = False
    #: Log messages are sent only for a request that asked with
    #: ``io.modelcontextprotocol/logLevel``, not by ``logging/setLevel``.
    #:
    #: Spec: LG-06.
    request_scoped_logging: bool = False
    #: Change notifications travel on ``subscriptions/listen`` streams, not
    #: ``resources/subscribe`` and the session.
    #:
    #: Spec: SB-01.
    listen_subscriptions: bool = False
    #: Requests may be task-augmented with ``params.task`` and ``tasks/*`` exist (the
    #: ``basic/utilities/tasks`` utility); 2026-07-28 moved tasks to an extension
    #: negotiated per request.
    #:
    #: Spec: TK-01..TK-19.
    tasks_utility: bool = False
    #: The error code of ``resources/read`` for an unknown resource (-32002 in the
    #: handshake era, -32602 in 2026-07-28).
    #:
    #: Spec: A-22.
    resource_not_found_code: int = -32002


# Each revision is written as its changes from the one before, as the spec's
# changelogs are.
V2024_11_05: Final = Revision(
    version="2024-11-05",
    era=Era.HANDSHAKE,
    batches=False,
    structured_output=False,
    display_metadata=False,
    progress_message=False,
    url_elicitation=False,
    completion_context=False,
    sse_priming=False,
)
V2025_03_26: Final = attrs.evolve(
    V2024_11_05, version="2025-03-26", batches=True, progress_message=True
)
V2025_06_18: Final = attrs.evolve(
    V2025_03_26,
    version="2025-06-18",
    batches=False,
    structured_output=True,
    display_metadata=True,
    completion_context=True,
)
V2025_11_25: Final = attrs.evolve(
    V2025_06_18, version="2025-11-25", url_elicitation=True, sse_priming=True, tasks_utility=True
)

# The modern era: no handshake, every request self-contained (VR-01).
V2026_07_28: Final = attrs.evolve(
    V2025_11_25,
    version="2026-07-28",
    era=Era.MODERN,
    # URL elicitation stays, without -32042 and elicitationId (EL rows, 26-07).
    url_elicitation=False,
    sse_priming=False,
    server_requests=False,
    ping=False,
    result_type=True,
    input_required=True,
    cache_hints=True,
    request_scoped_logging=True,
    listen_subscriptions=True,
    resource_not_found_code=-32602,
    tasks_utility=False,
)

#: Every revision this library speaks, by version, newest first.
REVISIONS: Final[dict[str, Revision]] = {
    revision.version: revision
    for revision in (V2026_07_28, V2025_11_25, V2025_06_18, V2025_03_26, V2024_11_05)
}
#: Every version of :data:`REVISIONS`, newest first: what a dual-era server
#: advertises (``server/discover``'s ``supportedVersions``, -32022's ``supported``).
ALL_VERSIONS: Final[tuple[str, ...]] = tuple(REVISIONS)
#: The handshake-era versions, newest first: what ``initialize`` and the
#: ``MCP-Protocol-Version`` header of a session negotiate.
SUPPORTED_VERSIONS: Final[tuple[str, ...]] = tuple(
    version for version, revision in REVISIONS.items() if revision.era is Era.HANDSHAKE
)
HANDSHAKE_VERSIONS: Final = SUPPORTED_VERSIONS
#: The modern-era versions a request may name in its ``_meta``, newest first.
MODERN_VERSIONS: Final[tuple[str, ...]] = tuple(
    version for version, revision in REVISIONS.items() if revision.era is Era.MODERN
)
#: What a client offers in ``initialize`` and a server counter-offers by default.
LATEST: Final[Revision] = REVISIONS[SUPPORTED_VERSIONS[0]]
LATEST_VERSION: Final[str] = LATEST.version
#: The newest modern revision: what a modern client names in its requests.
LATEST_MODERN: Final[Revision] = REVISIONS[MODERN_VERSIONS[0]]


# Cached (bounded): every connection works both out from its supported versions
# (configuration, never a peer's input), and a stateless HTTP server makes a
# connection per request.
@functools.lru_cache(maxsize=64)
def handshake_versions(versions: tuple[str, ...]) -> tuple[str, ...]:
    """The handshake-era versions among *versions*, in their order."""
    return tuple(v for v in versions if REVISIONS[v].era is Era.HANDSHAKE)


@functools.lru_cache(maxsize=64)
def modern_versions(versions: tuple[str, ...]) -> tuple[str, ...]:
    """The modern-era versions among *versions*, in their order."""
    return tuple(v for v in versions if REVISIONS[v].era is Era.MODERN)


#: The revision a Streamable HTTP server assumes for a request without an
#: ``MCP-Protocol-Version`` header (HT-36).
DEFAULT_HTTP_VERSION: Final[str] = V2025_03_26.version


def negotiate_version(requested: str, supported: tuple[str, ...] = SUPPORTED_VERSIONS) -> str:
    """The server's answer to ``initialize``: echo the requested version or offer our
    newest handshake-era one (a modern version is never the answer to ``initialize``).

    Raises:
        ValueError: *supported* holds no handshake-era version.

    Spec: LC-08.
    """
    handshake = handshake_versions(supported)
    if not handshake:
        raise ValueError("no handshake-era version is supported")
    return requested if requested in handshake else handshake[0]
