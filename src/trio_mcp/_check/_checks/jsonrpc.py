"""JSON-RPC envelopes: parse errors, invalid requests, unknown methods, notifications.

Each refusal must come back (a client waits for it otherwise) with the
caller's id when it could be read, and the session must go on.

Spec: BP-01, BP-02, BP-03, BP-07, BP-08, BP-10, BP-11.
"""

from __future__ import annotations

from typing import Any

import orjson

from .._definition import Check
from .._model import CheckFailed
from .._probe import Probe
from .._wire import is_response, new_id
from ._common import dump, error_of, expect

#: How long the checker watches for an answer to a notification.
NOTIFICATION_WATCH = 0.3


async def _refused(
    probe: Probe, frame: bytes, code: int, ids: tuple[object, ...], what: str
) -> None:
    """Send *frame*; CheckFailed unless an error *code* comes back with one of *ids*."""
    wire = probe.wire
    mark = wire.mark()
    await wire.send_frame(frame)

    def refusal(m: dict[str, Any]) -> bool:
        return is_response(m) and (m.get("id") in ids or m.get("id") is None)

    answer = await wire.wait_for(refusal, probe.options.timeout, since=mark)
    if answer is None:
        ended = " (the server's output ended)" if wire.ended else ""
        raise CheckFailed(f"{what} got no answer within {probe.options.timeout:g}s{ended}")
    expect(
        error_of(answer).get("code") == code,
        f"{what} got {dump(answer)}, not a {code} error",
    )
    expect(
        answer.get("id") in ids,
        f"{what}: the error's id is {answer.get('id')!r}, expected {' or '.join(map(repr, ids))}",
    )


async def parse_error(probe: Probe) -> str:
    await _refused(
        probe, b'{"jsonrpc": "2.0", "id": 1, "method": ', -32700, (None,), "malformed JSON"
    )
    await probe.still_answers()
    return "malformed JSON answered -32700 (id null); the session goes on"


def _request(probe: Probe, request_id: object, **extra: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": probe.liveness_method}
    params = probe.params()
    if params is not None:
        message["params"] = params
    message.update(extra)
    return message


async def wrong_version(probe: Probe) -> str:

    rid = new_id()
    frame = orjson.dumps(_request(probe, rid, jsonrpc="1.0"))
    await _refused(probe, frame, -32600, (rid, None), '"jsonrpc": "1.0"')
    await probe.still_answers()
    return 'a request with "jsonrpc": "1.0" refused with -32600'


def _same(a: object, b: object) -> bool:
    """Equal and of one type (``True == 1`` in Python, not in JSON)."""
    return type(a) is type(b) and a == b


async def bad_ids(probe: Probe) -> str:

    for bad in (None, True, 1.5):
        frame = orjson.dumps(_request(probe, bad))
        await _refused(probe, frame, -32600, (None,) if bad is None else (None, bad), f"id {bad!r}")
        successes = [
            m for m in probe.wire.received if "result" in m and "id" in m and _same(m["id"], bad)
        ]
        expect(not successes, f"a request with id {bad!r} was served: {dump(successes[:1])}")
    await probe.still_answers()
    return "ids null, true and 1.5 each refused with -32600"


async def result_and_error(probe: Probe) -> str:

    rid = new_id()
    # Shaped as a request, so that a reply is owed (a malformed *response*
    # cannot be answered): a message is a request or a response, never both.
    frame = orjson.dumps(_request(probe, rid, result={}, error={"code": -1, "message": "both"}))
    await _refused(probe, frame, -32600, (rid, None), "a message with both result and error")
    await probe.still_answers()
    return "a message with both result and error refused with -32600"


async def unknown_method(probe: Probe) -> str:
    answer = await probe.request("check/no-such-method")
    expect(error_of(answer).get("code") == -32601, f"an unknown method got {dump(answer)}")
    return "an unknown method refused with -32601 and the request's id"


async def notifications_unanswered(probe: Probe) -> str:
    wire = probe.wire
    mark = wire.mark()
    await wire.send_notification("notifications/check-unknown", probe.params())
    await wire.send_notification(probe.liveness_method, probe.params())
    await wire.send_notification("notifications/cancelled", {"requestId": f"never-{new_id()}"})
    rid = await probe.start(probe.liveness_method)
    await probe.answer(rid)
    await wire.quiet(NOTIFICATION_WATCH)
    answers = [m for m in wire.since(mark, is_response) if m.get("id") != rid]
    expect(not answers, f"a notification was answered: {dump(answers[:1])}")
    return "three notifications (unknown, a method without id, a cancel) got no answer"


CHECKS = (
    Check("jsonrpc.parse-error", "malformed JSON gets -32700", ("BP-01", "BP-07"), parse_error),
    Check("jsonrpc.wrong-version", 'a wrong "jsonrpc" gets -32600', ("BP-01",), wrong_version),
    Check(
        "jsonrpc.bad-ids",
        "null, boolean and fractional ids get -32600",
        ("BP-02", "BP-03"),
        bad_ids,
    ),
    Check(
        "jsonrpc.result-and-error",
        "both result and error get -32600",
        ("BP-08",),
        result_and_error,
    ),
    Check("jsonrpc.unknown-method", "an unknown method gets -32601", ("BP-07",), unknown_method),
    Check(
        "jsonrpc.notifications",
        "no response to any notification",
        ("BP-10", "BP-11", "CN-10"),
        notifications_unanswered,
    ),
)
