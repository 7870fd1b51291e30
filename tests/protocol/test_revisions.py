"""The revision table: one record per revision, and the connection's view of it."""

from __future__ import annotations

import pytest

from trio_mcp.protocol import (
    ALL_VERSIONS,
    LATEST,
    LATEST_VERSION,
    MODERN_VERSIONS,
    REVISIONS,
    SUPPORTED_VERSIONS,
    V2026_07_28,
    Connection,
    Era,
    Revision,
    Role,
)
from trio_mcp.protocol._revisions import DEFAULT_HTTP_VERSION
from trio_mcp.testing import ProtocolPair

# What each revision does differently, as the spec's changelogs say.
FEATURES = {
    # version: (batches, structured_output, display_metadata, progress_message,
    #           url_elicitation, completion_context, sse_priming)
    "2024-11-05": (False, False, False, False, False, False, False),
    "2025-03-26": (True, False, False, True, False, False, False),
    "2025-06-18": (False, True, True, True, False, True, False),
    "2025-11-25": (False, True, True, True, True, True, True),
}


def features(revision: Revision) -> tuple[bool, ...]:
    return (
        revision.batches,
        revision.structured_output,
        revision.display_metadata,
        revision.progress_message,
        revision.url_elicitation,
        revision.completion_context,
        revision.sse_priming,
    )


@pytest.mark.parametrize("version", list(FEATURES))
def test_each_revision_record(version: str) -> None:
    revision = REVISIONS[version]
    assert revision.version == version
    assert revision.era is Era.HANDSHAKE
    assert features(revision) == FEATURES[version]


def test_versions_newest_first_and_derived_from_the_table() -> None:
    assert tuple(sorted(FEATURES, reverse=True)) == SUPPORTED_VERSIONS
    assert ALL_VERSIONS == tuple(REVISIONS) == ("2026-07-28", *SUPPORTED_VERSIONS)
    assert MODERN_VERSIONS == ("2026-07-28",)
    assert LATEST is REVISIONS[SUPPORTED_VERSIONS[0]]
    assert LATEST_VERSION == LATEST.version == "2025-11-25"
    assert DEFAULT_HTTP_VERSION == "2025-03-26"  # HT-36


@pytest.mark.spec("VR-01", "PT-01", "PT-03", "CA-01", "LG-06", "SB-01", "A-22")
def test_the_modern_record() -> None:
    """2026-07-28 is 2025-11-25's features without the session's: no server
    requests, no ping, no -32042; with resultType, input-required results,
    cache hints, request-scoped logging, listen streams and -32602 for an
    unknown resource."""
    modern = REVISIONS["2026-07-28"]
    assert modern is V2026_07_28
    assert modern.era is Era.MODERN
    assert (modern.structured_output, modern.display_metadata, modern.progress_message) == (
        True,
        True,
        True,
    )
    assert [modern.batches, modern.url_elicitation, modern.sse_priming] == [False] * 3
    assert [modern.server_requests, modern.ping] == [False, False]
    assert [modern.result_type, modern.input_required, modern.cache_hints] == [True] * 3
    assert [modern.request_scoped_logging, modern.listen_subscriptions] == [True, True]
    assert modern.resource_not_found_code == -32602
    for version in SUPPORTED_VERSIONS:
        old = REVISIONS[version]
        assert [old.server_requests, old.ping, old.result_type] == [True, True, False]
        assert old.resource_not_found_code == -32002


def test_initialize_is_never_answered_with_a_modern_version() -> None:
    from trio_mcp.protocol import negotiate_version

    assert negotiate_version("2026-07-28", ALL_VERSIONS) == LATEST_VERSION
    with pytest.raises(ValueError, match="no handshake-era version"):
        negotiate_version("2025-11-25", MODERN_VERSIONS)


@pytest.mark.spec("BP-18")
def test_exactly_one_revision_accepts_batches() -> None:
    assert [r.version for r in REVISIONS.values() if r.batches] == ["2025-03-26"]


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_the_connection_holds_the_negotiated_record(version: str) -> None:
    pair = ProtocolPair(client_versions=(version,))
    assert pair.client.revision is None
    assert pair.client.protocol_version is None
    pair.handshake()
    for side in (pair.client, pair.server):
        assert side.revision is REVISIONS[version]
        assert side.protocol_version == version


def test_stateless_start_sets_the_record() -> None:
    server = Connection(Role.SERVER)
    server.start_stateless("2025-03-26")
    assert server.revision is REVISIONS["2025-03-26"]
    assert server.protocol_version == "2025-03-26"


def test_a_connection_speaks_only_known_revisions() -> None:
    with pytest.raises(ValueError, match="2099-01-01"):
        Connection(Role.CLIENT, supported_versions=("2099-01-01", "2025-11-25"))
