"""Progress: the token echoed, progress increasing, nothing after the response.

Spec: PG-01, PG-03, PG-04, PG-07, PG-10.
"""

from __future__ import annotations

import itertools

import trio

from .._definition import Check
from .._model import CheckFailed, CheckSkipped
from .._probe import Probe
from .._wire import is_progress_for, is_response_to, new_id
from ._common import dump, expect

#: How long after the response the checker watches for stray progress.
AFTER_WATCH = 0.3


async def progress(probe: Probe) -> str:
    wire = probe.wire
    tool = await probe.progress_tool()
    name = tool.name
    token = f"check-progress-{new_id()}"
    mark = wire.mark()
    started = trio.current_time()
    rid = await probe.start(
        "tools/call", {"name": name, "arguments": tool.arguments}, progress_token=token
    )
    try:
        answer = await probe.answer(rid)
    except CheckFailed as failed:
        raise CheckFailed(f"{tool.described()}: {failed}{tool.advice()}") from None
    probe.findings[f"progress-seconds:{probe.era}"] = trio.current_time() - started
    await wire.quiet(AFTER_WATCH)
    window = wire.received[mark:]
    answered = window.index(answer)
    reports = [(i, m) for i, m in enumerate(window) if is_progress_for(token)(m)]
    if not reports:
        raise CheckSkipped(f"{tool.described()} sent no progress (allowed){tool.advice()}")
    values = [m["params"].get("progress") for _, m in reports]
    expect(
        all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values),
        f"a progress value is not a number: {values}",
    )
    expect(
        all(b > a for a, b in itertools.pairwise(values)),
        f"progress does not increase: {values}",
    )
    after = [m for i, m in reports if i > answered]
    expect(not after, f"progress after the response: {dump(after[:1])}")
    expect(
        is_response_to(rid)(answer) and "result" in answer,
        f"{name} failed: {dump(answer)}{tool.advice()}",
    )
    return f"{len(reports)} progress notification(s) from {name}, token echoed, increasing"


CHECKS = (
    Check(
        "progress.token",
        "progress: token echoed, increasing, none after the response",
        ("PG-01", "PG-03", "PG-04", "PG-07", "PG-10"),
        progress,
    ),
)
