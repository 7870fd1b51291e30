"""Concurrency: an answer while a slow tool runs; 64 calls in one write, each answered once.

Spec: PI-02, BP-06, ST-02.
"""

from __future__ import annotations

import contextlib
from collections import Counter

import orjson
import trio

from ...protocol import Request, RequestId, encode
from .._definition import Check
from .._probe import Probe, result_text
from .._wire import Wire, is_response, is_response_to, new_id
from ._common import dump, expect

BURST = 64
#: Bound on the answer that must come while the slow tool runs.
WHILE_SLOW = 5.0


async def _cancel_quietly(wire: Wire, request_id: RequestId) -> None:
    """Cancel the slow call so it does not run on into the next check."""
    with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
        await wire.cancel(request_id)


async def answer_while_slow(probe: Probe) -> str:
    wire = probe.wire
    slow_tool = await probe.slow_tool()
    name = slow_tool.name
    slow = await probe.start("tools/call", {"name": name, "arguments": slow_tool.arguments})
    try:
        await wire.quiet(0.2)
        rid = await probe.start(probe.liveness_method)
        answer = await probe.answer(rid, within=WHILE_SLOW)
        expect("result" in answer, f"{probe.liveness_method} got {dump(answer)}")
        expect(
            not wire.since(0, is_response_to(slow)),
            f"{slow_tool.described()} ended before the {probe.liveness_method}: it is not slow "
            f"enough{slow_tool.advice()}",
        )
    finally:
        await _cancel_quietly(wire, slow)
    return f"{probe.liveness_method} answered while {name} ran"


async def burst(probe: Probe) -> str:
    wire = probe.wire
    echo = await probe.echo_tool()
    payloads: dict[int, str] = {}
    frames: list[bytes] = []
    for _ in range(BURST):
        rid = new_id()
        if echo is None:
            frames.append(encode(Request(rid, probe.liveness_method, probe.params())))
        else:
            payloads[rid] = f"burst-{rid}"
            params = probe.params({"name": echo[0], "arguments": {echo[1]: payloads[rid]}})
            frames.append(encode(Request(rid, "tools/call", params)))
    ids = [orjson.loads(frame)["id"] for frame in frames]
    mark = wire.mark()
    await wire.send_frames(frames)
    # 64 answers may take longer than one on a loaded machine.
    with trio.move_on_after(probe.options.timeout * 3):
        while not set(ids) <= {m.get("id") for m in wire.since(mark, is_response)}:
            await wire.wait_for(lambda m: True, probe.options.timeout, since=wire.mark())
    await wire.quiet(0.2)
    answers = [m for m in wire.since(mark, is_response) if m.get("id") in set(ids)]
    counts = Counter(m.get("id") for m in answers)
    missing = [i for i in ids if counts[i] == 0]
    expect(not missing, f"{len(missing)} of {BURST} calls got no answer (first: id {missing[:1]})")
    twice = [i for i, n in counts.items() if n > 1]
    expect(not twice, f"ids answered more than once: {twice[:5]}")
    for message in answers:
        payload = payloads.get(message["id"])
        if payload is not None:
            expect(
                payload in result_text(message),
                f"the answer to id {message['id']} does not carry its payload {payload!r}: "
                f"{dump(message)}",
            )
    if echo is None:
        return (
            f"{BURST} {probe.liveness_method} requests in one write, each answered once"
            + await probe.without_echo()
        )
    return f"{BURST} calls of {echo[0]} in one write, each answered once with its own payload"


CHECKS = (
    Check(
        "concurrency.answer-while-slow",
        "a request answered while a slow tool runs",
        ("PI-02", "ST-02"),
        answer_while_slow,
    ),
    Check(
        "concurrency.burst",
        f"{BURST} calls in one write, each answered once",
        ("BP-06",),
        burst,
    ),
)
