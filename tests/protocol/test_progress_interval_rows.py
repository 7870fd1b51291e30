"""PG-09: the progress we send can be rate-limited per request (``progress_interval``).

Table rows on the pair's hand-driven clock; tests/session/test_progress_rate_limit.py
shows the same rule end to end through a session.
"""

from __future__ import annotations

import pytest

from trio_mcp.protocol import Direction, LocalProtocolError, Progress, RequestId
from trio_mcp.testing import ProtocolPair

CALL = {"name": "scan", "arguments": {}}

# (seconds since the first report, progress, total) -> sent?
# progress_interval is 1.0.
ROWS: list[tuple[float, float, float | None, bool]] = [
    (0.0, 1, 10, True),  # the first report is always sent
    (0.5, 2, 10, False),  # too soon after the last one sent
    (0.99, 3, 10, False),  # still too soon: measured from the last *sent* (t=0)
    (1.0, 4, 10, True),  # a full interval after t=0
    (1.1, 5, None, False),  # no total: nothing to reach
    (1.2, 10, 10, True),  # reaches its total: always sent
    (1.3, 11, 10, True),  # past its total: sent too
]


def _running_request(pair: ProtocolPair) -> RequestId:
    pair.handshake()
    request, event = pair.client_request("tools/call", CALL, want_progress=True)
    assert pair.server.start_inbound(event.request.id)
    return request.id


@pytest.mark.spec("PG-09")
def test_reports_within_the_interval_are_not_sent_unless_they_reach_the_total() -> None:
    pair = ProtocolPair(server_options={"progress_interval": 1.0})
    request_id = _running_request(pair)
    start = pair.clock.now
    sent = []
    for at, progress, total, expected in ROWS:
        pair.clock.now = start + at
        note = pair.server.progress_notification(request_id, progress, total)
        assert (note is not None) is expected, (at, progress)
        if note is not None:
            sent.append(progress)
            assert pair.server_to_client(note)  # the client receives it
        # Every report, sent or not, is the record's progress.
        record = pair.server.record(Direction.INBOUND, request_id)
        assert record is not None
        assert record.progress == Progress(progress, total)
    assert sent == [1, 4, 10, 11]
    client_record = pair.client.record(Direction.OUTBOUND, request_id)
    assert client_record is not None
    assert client_record.progress == Progress(11, 10)


@pytest.mark.spec("PG-09")
@pytest.mark.spec("PG-04")
def test_a_held_back_report_must_still_increase() -> None:
    pair = ProtocolPair(server_options={"progress_interval": 1.0})
    request_id = _running_request(pair)
    assert pair.server.progress_notification(request_id, 5) is not None
    assert pair.server.progress_notification(request_id, 6) is None  # held back
    with pytest.raises(LocalProtocolError, match="PG-04"):
        pair.server.progress_notification(request_id, 6)


@pytest.mark.spec("PG-09")
def test_without_an_interval_every_report_is_sent() -> None:
    pair = ProtocolPair()
    request_id = _running_request(pair)
    assert pair.server.progress_interval == 0
    notes = [pair.server.progress_notification(request_id, step) for step in range(1, 50)]
    assert all(note is not None for note in notes)
