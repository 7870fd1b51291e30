"""The session layer's handles on a request: what it keeps with a request and
writes to a record goes through ``Connection`` methods, never a ``RequestEntry``,
and every change to a record reaches the observer."""

from __future__ import annotations

from trio_mcp import types as t
from trio_mcp.protocol import (
    CancelOrigin,
    Direction,
    MultiObserver,
    Request,
    RequestObserver,
    RequestRecord,
    RequestState,
)
from trio_mcp.testing import ProtocolPair, RecordingObserver

CALL = {"name": "slow", "arguments": {}}
RESULT = t.CallToolResult(content=[t.TextContent(text="done")])


class UpdateRecorder(RecordingObserver):
    def __init__(self) -> None:
        super().__init__()
        self.updates: list[RequestRecord] = []

    def on_update(self, record: RequestRecord) -> None:
        self.updates.append(record)


class Handle:
    def __init__(self) -> None:
        self.reasons: list[str | None] = []

    def cancel(self, reason: str | None = None) -> None:
        self.reasons.append(reason)


def running(
    *, want_progress: bool = False, observer: RequestObserver | None = None
) -> tuple[ProtocolPair, UpdateRecorder, Request]:
    recorder = UpdateRecorder()
    pair = ProtocolPair(server_options={"observer": observer or recorder})
    pair.handshake()
    recorder.updates.clear()  # only what the session layer's handles write
    request, _ = pair.client_request("tools/call", CALL, want_progress=want_progress)
    assert pair.server.start_inbound(request.id)
    return pair, recorder, request


def test_an_attached_handle_is_found_while_the_request_is_in_flight() -> None:
    pair, _, request = running()
    handle = Handle()
    assert pair.server.handle(request.id) is None
    pair.server.attach(request.id, handle)
    assert pair.server.handle(request.id) is handle
    assert pair.server.respond(request.id, RESULT) is not None
    assert pair.server.handle(request.id) is None
    pair.server.attach(request.id, Handle())  # ended: nothing to attach to
    assert pair.server.handle(request.id) is None
    assert handle.reasons == []  # the connection never cancels a handle itself


def test_request_cancel_notes_the_first_asker_and_tells_the_observer_once() -> None:
    pair, recorder, request = running()
    server = pair.server
    assert not server.cancel_requested(request.id)
    assert server.request_cancel(Direction.INBOUND, request.id, CancelOrigin.SHUTDOWN, "bye")
    assert server.request_cancel(Direction.INBOUND, request.id, CancelOrigin.TRANSPORT, "gone")
    assert server.cancel_requested(request.id)
    [update] = recorder.updates
    assert (update.id, update.state) == (request.id, RequestState.RUNNING)
    assert (update.cancel_origin, update.cancel_reason) == (CancelOrigin.SHUTDOWN, "bye")
    record = server.record(Direction.INBOUND, request.id)
    assert record is not None
    assert record.state is RequestState.RUNNING  # asked, not yet cancelled
    # The cancel request is no transition: arrival and start only.
    assert recorder.path(request.id) == [RequestState.QUEUED, RequestState.RUNNING]


def test_request_cancel_of_a_request_not_in_flight_notes_nothing() -> None:
    pair, recorder, request = running()
    server = pair.server
    assert server.respond(request.id, RESULT) is not None
    assert not server.request_cancel(Direction.INBOUND, request.id, CancelOrigin.SHUTDOWN, "x")
    assert not server.request_cancel(Direction.OUTBOUND, 99, CancelOrigin.CALLER, "x")
    assert recorder.updates == []
    assert server.cancel_requested(request.id)  # ended: its result is not awaited


def test_request_cancel_of_an_outbound_request_is_noted_on_its_record() -> None:
    pair, _, request = running()
    client = pair.client
    assert client.request_cancel(Direction.OUTBOUND, request.id, CancelOrigin.CALLER, "stop")
    record = client.record(Direction.OUTBOUND, request.id)
    assert record is not None
    assert (record.state, record.cancel_origin) == (RequestState.RUNNING, CancelOrigin.CALLER)


def test_note_worker_thread_is_on_the_record_and_tells_the_observer() -> None:
    pair, recorder, request = running()
    pair.server.note_worker_thread(request.id)
    pair.server.note_worker_thread(request.id)
    [update] = recorder.updates
    assert update.in_worker_thread
    assert pair.server.respond(request.id, RESULT) is not None
    record = pair.server.record(Direction.INBOUND, request.id)
    assert record is not None
    assert record.in_worker_thread


def test_progress_token_is_the_requesters_while_in_flight() -> None:
    pair, _, request = running(want_progress=True)
    assert pair.server.progress_token(request.id) == request.id  # our tokens are our ids
    assert pair.server.respond(request.id, RESULT) is not None
    assert pair.server.progress_token(request.id) is None
    plain, _, other = running()
    assert plain.server.progress_token(other.id) is None


def test_a_multi_observer_passes_an_update_to_every_observer() -> None:
    first, second = UpdateRecorder(), UpdateRecorder()
    pair, _, request = running(observer=MultiObserver(first, second))
    pair.server.note_worker_thread(request.id)
    assert [r.id for r in first.updates] == [r.id for r in second.updates] == [request.id]
