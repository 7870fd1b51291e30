"""Cancellation: no answer and no more progress after a cancel, stray cancels ignored,
a duplicate in-flight id refused and never answered twice (over Streamable HTTP
too: in a handshake-era session as on stdio; in 2026-07-28, where every POST is
a request of its own, each answered on its own stream and never cross-wired),
and a 2026-07-28 HTTP request closed before its first response event.

Spec: CN-05, CN-06, CN-08, CN-10, CN-16, SI-09, BP-04, BP-05, HM-13.
"""

from __future__ import annotations

import contextlib

import trio

from .._definition import Check
from .._http import HttpWire
from .._model import HTTP, MODERN, CheckFailed, CheckSkipped
from .._probe import Probe
from .._wire import is_progress_for, is_response, is_response_to, new_id
from ._common import IN_FLIGHT_GRACE, dump, error_of, expect

#: How long after a cancel the checker watches for frames of the cancelled call
#: (a handler that ignores it reports on past the in-flight grace).
CANCEL_WATCH = 1.0
#: How long the checker waits for the answers to a duplicate id (a server that
#: serves it as a request of its own answers in milliseconds).
DUPLICATE_WATCH = 0.5
#: How long a slow call runs before the duplicate is sent.
SETTLE = 0.3


async def cancelled_call(probe: Probe) -> str:
    wire = probe.wire
    tool = await probe.progress_tool(long=True)
    name, advice = tool.name, tool.advice()
    token = f"check-cancel-{new_id()}"
    rid = await probe.start(
        "tools/call", {"name": name, "arguments": tool.arguments}, progress_token=token
    )
    first = await wire.wait_for(is_progress_for(token), probe.options.timeout)
    if first is None:
        if wire.since(0, is_response_to(rid)):
            raise CheckSkipped(
                f"{tool.described()} answered before it reported progress; nothing to "
                f"cancel{advice}"
            )
        raise CheckSkipped(f"{tool.described()} reported no progress within the bound{advice}")
    if wire.since(0, is_response_to(rid)):
        raise CheckSkipped(f"{tool.described()} finished before it could be cancelled{advice}")
    mark = wire.mark()
    await wire.cancel(rid)
    cancelled_at = trio.current_time()
    await wire.quiet(CANCEL_WATCH)
    late = [
        (m, at)
        for m, at in zip(wire.received[mark:], wire.arrival[mark:], strict=True)
        if at > cancelled_at + IN_FLIGHT_GRACE
    ]
    answers = [m for m in wire.since(mark, is_response_to(rid))]
    if answers:
        answered_at = wire.arrival[wire.received.index(answers[0])]
        if answered_at <= cancelled_at + IN_FLIGHT_GRACE:
            raise CheckSkipped(
                f"{name} finished as it was cancelled (a race the spec allows)"
                + (advice or "; name a longer run with --progress-tool NAME --progress-args JSON")
            )
        raise CheckFailed(
            f"the cancelled call was answered {answered_at - cancelled_at:.3f}s after the cancel: "
            f"{dump(answers[:1])}"
        )
    progress_after = [m for m, _ in late if is_progress_for(token)(m)]
    expect(
        not progress_after,
        f"the handler kept running: {len(progress_after)} progress notification(s) more than "
        f"{IN_FLIGHT_GRACE}s after the cancel, the last {dump(progress_after[-1:])}",
    )
    await probe.still_answers()
    if wire.transport == HTTP and probe.era == MODERN:
        # Closing the stream is the cancel there: nothing more can arrive on
        # it, so only the session going on is seen, not the handler stopping.
        return f"{name}'s response stream closed after its first progress; the server goes on"
    return f"{name} cancelled after its first progress: no answer, no progress after it"


async def stray_cancels(probe: Probe) -> str:
    wire = probe.wire
    finished = await probe.start(probe.liveness_method)
    await probe.answer(finished)
    mark = wire.mark()
    await wire.cancel(f"check-never-sent-{new_id()}")
    await wire.cancel(finished)
    await wire.send_notification("notifications/cancelled", {})
    await wire.send_notification("notifications/cancelled", {"requestId": None})
    rid = await probe.start(probe.liveness_method)
    answer = await probe.answer(rid)
    expect("result" in answer, f"after stray cancels the session answered {dump(answer)}")
    await wire.quiet(0.2)
    others = [m for m in wire.since(mark, is_response) if m.get("id") != rid]
    expect(not others, f"a stray cancel was answered: {dump(others[:1])}")
    return "cancels of an unknown id, a finished id and malformed ones ignored"


async def duplicate_id(probe: Probe) -> str:
    if isinstance(probe.wire, HttpWire) and probe.era == MODERN:
        return await _duplicate_id_on_posts(probe, probe.wire)
    wire = probe.wire
    tool = await probe.slow_tool()
    rid = new_id()
    await probe.start(
        "tools/call", {"name": tool.name, "arguments": tool.arguments}, request_id=rid
    )
    await wire.quiet(SETTLE)
    expect(
        not wire.since(0, is_response_to(rid)),
        f"{tool.described()} answered at once{tool.advice()}",
    )
    await probe.start(probe.liveness_method, request_id=rid)
    await wire.quiet(DUPLICATE_WATCH)
    with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
        await wire.cancel(rid)
    await wire.quiet(0.3)
    answers = wire.since(0, is_response_to(rid))
    successes = [m for m in answers if "result" in m]
    expect(
        not successes,
        f"id {rid} of a call still in flight was reused by a {probe.liveness_method} and "
        f"{len(successes)} result(s) came back for it: {dump(successes)}",
    )
    expect(len(answers) <= 1, f"id {rid} was answered {len(answers)} times: {dump(answers)}")
    await probe.still_answers()
    if answers:
        return f"the duplicate id refused with {error_of(answers[0]).get('code')}, answered once"
    return "the duplicate id was ignored (never answered twice)"


async def _duplicate_id_on_posts(probe: Probe, wire: HttpWire) -> str:
    """2026-07-28 HTTP: a POST is a request of its own, so an id in flight on
    one may be used on another; each must be answered on its own stream."""
    tool = await probe.slow_tool()
    rid = new_id()
    slow = await wire.post_request(
        _call(probe, rid, tool.name, tool.arguments), wait_head=False, within=probe.options.timeout
    )
    await wire.quiet(SETTLE)
    expect(not slow.messages, f"{tool.described()} answered at once{tool.advice()}")
    await probe.start(probe.liveness_method, request_id=rid)
    other = wire.posts[-1]
    await wire.quiet(DUPLICATE_WATCH)
    wrong = [m for m in slow.messages if is_response_to(rid)(m)]
    await wire.cancel(rid)
    await wire.quiet(0.3)
    expect(
        not wrong,
        f"the response to a {probe.liveness_method} sharing id {rid} came on the stream of "
        f"the call still in flight: {dump(wrong)}",
    )
    answers = [m for m in other.messages if is_response_to(rid)(m)]
    expect(
        len(answers) == 1 and "result" in answers[0],
        f"a {probe.liveness_method} with id {rid}, used by a call in flight on another POST, "
        f"got {dump(answers) if answers else 'no answer'} on its own stream",
    )
    await probe.still_answers()
    return f"each POST answered on its own stream ({probe.liveness_method} id {rid} beside a call)"


def _call(probe: Probe, rid: object, name: str, arguments: dict[str, object]) -> dict[str, object]:
    params = probe.params({"name": name, "arguments": arguments})
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


async def before_first_event(probe: Probe) -> str:
    wire = probe.wire
    assert isinstance(wire, HttpWire)
    tool = await probe.slow_tool()
    points: list[str] = []
    for wait_head in (False, True):
        rid = new_id()
        post = await wire.post_request(
            _call(probe, rid, tool.name, tool.arguments),
            wait_head=wait_head,
            within=probe.options.timeout,
        )
        if post.messages:
            raise CheckSkipped(
                f"{tool.described()} sent {dump(post.messages[:1])} at once; nothing to close "
                f"before the first event{tool.advice()}"
            )
        point = "before the response head" if post.status is None else "after the head"
        if wait_head and post.status is None:
            point = f"with no head within {probe.options.timeout:g}s"
        await wire.cancel(rid)
        await wire.quiet(0.2)
        await probe.still_answers()
        points.append(point)
    return (
        f"{tool.name} closed {' and '.join(points)} (before its first event); "
        "the server answered after each"
    )


CHECKS = (
    Check(
        "cancel.cancelled-call",
        "a cancelled call: no answer, its handler stops",
        ("CN-05", "CN-16", "SI-09", "HM-13"),
        cancelled_call,
    ),
    Check(
        "cancel.stray-cancels",
        "cancels of unknown and finished ids are ignored",
        ("CN-06", "CN-08", "CN-10"),
        stray_cancels,
    ),
    Check(
        "cancel.duplicate-id",
        "a duplicate in-flight id is refused, never answered twice",
        ("BP-04", "BP-05"),
        duplicate_id,
    ),
    Check(
        "cancel.before-first-event",
        "closing a 2026-07-28 POST before its first event cancels it and the server goes on",
        ("HM-13", "CN-16"),
        before_first_event,
        eras=frozenset({MODERN}),
        transports=frozenset({HTTP}),
    ),
)
