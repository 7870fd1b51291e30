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
assumed without an ``MCP-Protocol-Version`` header).
"""

from __future__ import annotations

import enum
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
    #: Receivers must accept JSON-RPC batches (BP-18).
    batches: bool
    #: Tools declare ``outputSchema`` and results carry ``structuredContent``
    #: (TL-07, TL-08).
    structured_output: bool
    #: Tool and prompt definitions carry ``title`` and ``icons``.
    display_metadata: bool
    #: ``notifications/progress`` carries a ``message`` (PG-06).
    progress_message: bool
    #: URL-mode elicitation and its error -32042 exist (EL-10).
    url_elicitation: bool
    #: ``completion/complete`` carries ``context.arguments`` (CP-03).
    completion_context: bool
    #: A resumable Streamable HTTP server opens each SSE stream with a priming
    #: event (HT-10).
    sse_priming: bool


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
    V2025_06_18, version="2025-11-25", url_elicitation=True, sse_priming=True
)

#: Every revision this library speaks, by version, newest first.
REVISIONS: Final[dict[str, Revision]] = {
    revision.version: revision for revision in (V2025_11_25, V2025_06_18, V2025_03_26, V2024_11_05)
}
#: The versions of :data:`REVISIONS`, newest first.
SUPPORTED_VERSIONS: Final[tuple[str, ...]] = tuple(REVISIONS)
#: What a client offers and a server counter-offers by default.
LATEST: Final[Revision] = REVISIONS[SUPPORTED_VERSIONS[0]]
LATEST_VERSION: Final[str] = LATEST.version
#: The revision a Streamable HTTP server assumes for a request without an
#: ``MCP-Protocol-Version`` header (HT-36).
DEFAULT_HTTP_VERSION: Final[str] = V2025_03_26.version


def negotiate_version(requested: str, supported: tuple[str, ...] = SUPPORTED_VERSIONS) -> str:
    """The server's answer to a requested version (LC-08): echo it or offer our newest."""
    return requested if requested in supported else supported[0]
