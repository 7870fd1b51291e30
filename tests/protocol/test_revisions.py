"""The revision table: one record per revision, and the connection's view of it."""

from __future__ import annotations

import pytest

from trio_mcp.protocol import (
    LATEST,
    LATEST_VERSION,
    REVISIONS,
    SUPPORTED_VERSIONS,
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
    assert SUPPORTED_VERSIONS == tuple(REVISIONS) == tuple(sorted(FEATURES, reverse=True))
    assert LATEST is REVISIONS[SUPPORTED_VERSIONS[0]]
    assert LATEST_VERSION == LATEST.version == "2025-11-25"
    assert DEFAULT_HTTP_VERSION == "2025-03-26"  # HT-36


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
