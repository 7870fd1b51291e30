"""How many finished requests a server session keeps: ``Server(request_history=,
remembered_requests=)`` bound a session's memory (BP-04, C-02)."""

from __future__ import annotations

import logging

import pytest
from server_helpers import open_raw

from trio_mcp import Server


async def test_a_session_keeps_at_most_the_servers_bounds_of_finished_requests(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = Server("bounded", request_history=2, remembered_requests=3)
    async with open_raw(server) as (peer, session):
        for request_id in range(10, 16):
            reply = await peer.wait_response(await peer.send_request("ping", request_id=request_id))
            assert reply["result"] == {}
        finished = [r for r in session.requests() if r.state.is_terminal]
        assert [r.id for r in finished] == [14, 15]  # the history: the last two
        # Remembered (the last three): a reuse is accepted and told (C-02) ...
        with caplog.at_level(logging.WARNING, logger="trio_mcp"):
            await peer.wait_response(await peer.send_request("ping", request_id=13))
            # ... one past the bound is forgotten: a fresh id again.
            await peer.wait_response(await peer.send_request("ping", request_id=10))
        reuses = [r.getMessage() for r in caplog.records if "reused request id" in r.getMessage()]
        assert reuses == ["the peer reused request id 13 (accepted: its first use was answered)"]


def test_the_bounds_are_checked() -> None:
    with pytest.raises(ValueError, match="request_history"):
        Server("bad", request_history=-1)
    with pytest.raises(ValueError, match="remembered_requests"):
        Server("bad", remembered_requests=-1)
