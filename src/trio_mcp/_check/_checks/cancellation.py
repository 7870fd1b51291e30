"""Cancellation: no answer and no more progress after a cancel, stray cancels ignored,
a duplicate in-flight id refused and never answered twice.

Spec: CN-05, CN-06, CN-08, CN-10, CN-16, SI-09, BP-04, BP-05, HM-13.
"""

from __future__ import annotations

import contextlib

import trio

from .._definition import Check
from .._model import HTTP, MODERN, STDIO, CheckFailed, CheckSkipped
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
        transports=frozenset({STDIO}),
    ),
)
