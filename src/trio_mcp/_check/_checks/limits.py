"""Limits: a large argument is answered or refused with the caller's id.

Spec: BP-07.
"""

from __future__ import annotations

from .._definition import Check
from .._probe import Probe
from ._common import dump, error_of, expect

#: The size of the large argument (1 MiB).
LARGE = 1 << 20


async def large_argument(probe: Probe) -> str:
    echo = await probe.echo_tool()
    name, argument = echo if echo is not None else ("check-no-such-tool", "text")
    big = "x" * LARGE
    answer = await probe.request("tools/call", {"name": name, "arguments": {argument: big}})
    expect("result" in answer or "code" in error_of(answer), f"the answer is {dump(answer)}")
    await probe.still_answers()
    how = "answered" if "result" in answer else f"refused with {error_of(answer).get('code')}"
    why = "" if echo is not None else await probe.without_echo()
    return f"a {LARGE >> 20} MiB argument to {name} {how}, with the caller's id{why}"


CHECKS = (
    Check(
        "limits.large-argument",
        "a large argument answered or refused with the caller's id",
        ("BP-07",),
        large_argument,
    ),
)
