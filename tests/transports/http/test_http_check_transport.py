"""The transport checker over real loopback HTTP, both response modes, both directions."""

from __future__ import annotations

import functools

import pytest
from http_helpers import http_transport_pair

from trio_mcp.testing import check_transport


@pytest.mark.spec("HT-05")
@pytest.mark.spec("HT-23")
@pytest.mark.parametrize("json_response", [False, True])
@pytest.mark.parametrize("client_first", [True, False])
async def test_http_transport_passes_check_transport(
    json_response: bool, client_first: bool
) -> None:
    await check_transport(
        functools.partial(
            http_transport_pair, json_response=json_response, client_first=client_first
        )
    )
