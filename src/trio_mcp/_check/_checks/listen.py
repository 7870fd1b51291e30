"""2026-07-28 ``subscriptions/listen``: a listen that accepts nothing is answered
at once, a server with nothing to listen to refuses it, and ending a connection
or a stream with a listen in flight neither hangs nor wedges the server.

The first two follow the transports working group's draft on unavailable and
empty listen requests (not yet part of 2026-07-28; the failure message says
so): a listen that accepts nothing is acknowledged with ``notifications: {}``
then answered with the ``complete`` result, and a server that declares no
``listChanged``, no ``resources.subscribe`` and no task status answers -32601
(HTTP 404) with no acknowledgement.

Cancellation: every wait is bounded by the options' timeout; a listen left
open by a failing server is cancelled before the check ends.

Spec: SB-02, SB-09, SB-15, SB-16, HM-13, HM-17.
"""

from __future__ import annotations

import contextlib
from typing import Any

import trio

from .._definition import Check
from .._http import HttpWire
from .._model import MODERN, CheckFailed, CheckSkipped
from .._probe import Probe
from .._stdio import StdioWire
from .._wire import Wire, is_response_to
from ._common import dump, error_of, expect

ACK = "notifications/subscriptions/acknowledged"
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
#: The draft the empty and unsupported rules come from, as a failure names it.
DRAFT = "the transports working group's draft rule for empty and unavailable listen requests"
#: Filter field -> the capability path that makes it a selector.
_SELECTORS = {
    "toolsListChanged": ("tools", "listChanged"),
    "promptsListChanged": ("prompts", "listChanged"),
    "resourcesListChanged": ("resources", "listChanged"),
}
_TASKS_EXTENSION = "io.modelcontextprotocol/tasks"


def _declared(capabilities: dict[str, Any], path: tuple[str, str]) -> bool:
    feature = capabilities.get(path[0])
    return isinstance(feature, dict) and bool(feature.get(path[1]))


def selectors(capabilities: dict[str, Any]) -> list[str]:
    """What a listen can select on a server declaring *capabilities*."""
    found = [field for field, path in _SELECTORS.items() if _declared(capabilities, path)]
    if _declared(capabilities, ("resources", "subscribe")):
        found.append("resourceSubscriptions")
    extensions = capabilities.get("extensions")
    if isinstance(extensions, dict) and _TASKS_EXTENSION in extensions:
        found.append("taskIds")
    return found


async def _capabilities(probe: Probe, wire: Wire | None = None) -> dict[str, Any]:
    key = "discover-capabilities"
    if key not in probe.findings:
        answer = await probe.request("server/discover", wire=wire)
        result = answer.get("result")
        caps = result.get("capabilities") if isinstance(result, dict) else None
        if not isinstance(caps, dict):
            raise CheckSkipped(f"server/discover shows no capabilities: {dump(answer)}")
        probe.findings[key] = caps
    known: dict[str, Any] = probe.findings[key]
    return known


def _is_ack_for(request_id: object) -> Any:
    def match(message: dict[str, Any]) -> bool:
        params = message.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        return (
            message.get("method") == ACK
            and isinstance(meta, dict)
            and meta.get(SUBSCRIPTION_ID) == request_id
        )

    return match


async def _end(wire: Wire, request_id: object) -> None:
    with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
        await wire.cancel(request_id)  # type: ignore[arg-type]


def _status(wire: Wire, request_id: object) -> int | None:
    if isinstance(wire, HttpWire):
        for post in wire.posts:
            if post.request_id == request_id:
                return post.status
    return None


async def empty(probe: Probe) -> str:
    offered = selectors(await _capabilities(probe))
    if not offered:
        raise CheckSkipped("the server declares nothing a listen can select (listen.unsupported)")
    wire = probe.wire
    mark = wire.mark()
    rid = await probe.start("subscriptions/listen", {"notifications": {}})
    started = trio.current_time()
    answer = await wire.wait_for(is_response_to(rid), probe.options.timeout)
    if answer is None:
        acked = bool(wire.since(mark, _is_ack_for(rid)))
        await _end(wire, rid)
        raise CheckFailed(
            f"a listen that accepts nothing was {'acknowledged and ' if acked else ''}still open "
            f"{probe.options.timeout:g}s later; {DRAFT} answers it at once with the complete result"
        )
    elapsed = trio.current_time() - started
    result = answer.get("result")
    expect(
        isinstance(result, dict) and result.get("resultType") == "complete",
        f"a listen that accepts nothing got {dump(answer)}, not a complete result",
    )
    acks = wire.since(mark, _is_ack_for(rid))
    expect(acks, f"a listen that accepts nothing was answered unacknowledged ({DRAFT})")
    accepted = acks[0].get("params", {}).get("notifications")
    expect(
        accepted == {},
        f"the acknowledgement of a listen that asked for nothing honours {dump(accepted)}",
    )
    return f"acknowledged with notifications {{}} and answered complete in {elapsed:.2f}s"


async def unsupported(probe: Probe) -> str:
    offered = selectors(await _capabilities(probe))
    wire = probe.wire
    if offered:
        # The converse: a server with something to listen to serves listen.
        rid = await _open_listen(probe, wire, offered, refusal_fails=True)
        await _end(wire, rid)
        return f"a listen for what it declares ({', '.join(offered)}) acknowledged, not refused"
    mark = wire.mark()
    rid = await probe.start("subscriptions/listen", {"notifications": {"toolsListChanged": True}})
    answer = await wire.wait_for(is_response_to(rid), probe.options.timeout)
    if answer is None:
        await _end(wire, rid)
        raise CheckFailed(
            f"a listen to a server with nothing to listen to was still open "
            f"{probe.options.timeout:g}s later; {DRAFT} refuses it with -32601"
        )
    code = error_of(answer).get("code")
    expect(code == -32601, f"a listen to a server with nothing to listen to got {dump(answer)}")
    expect(
        not wire.since(mark, _is_ack_for(rid)),
        "the -32601 refusal of a listen came after an acknowledgement",
    )
    status = _status(wire, rid)
    if isinstance(wire, HttpWire):
        expect(status == 404, f"the -32601 refusal of a listen came with HTTP {status}, not 404")
        return "refused with -32601 and HTTP 404, no acknowledgement"
    return "refused with -32601, no acknowledgement"


async def _open_listen(
    probe: Probe, wire: Wire, offered: list[str], *, refusal_fails: bool = False
) -> object:
    """A listen for every list-changed selector (or every resource), acknowledged;
    CheckFailed if it is refused -32601 (*refusal_fails*), CheckSkipped otherwise."""
    wanted: dict[str, Any] = {field: True for field in offered if field in _SELECTORS}
    if not wanted and "resourceSubscriptions" in offered:
        wanted["resourceSubscriptions"] = ["file:///trio-mcp-check"]
    if not wanted:
        raise CheckSkipped("the server declares no list-changed or resource selector to hold open")
    mark = wire.mark()
    rid = await probe.start("subscriptions/listen", {"notifications": wanted}, wire=wire)
    if await wire.wait_for(_is_ack_for(rid), probe.options.timeout) is None:
        answered = wire.since(mark, is_response_to(rid))
        if refusal_fails and answered and error_of(answered[0]).get("code") == -32601:
            raise CheckFailed(
                f"a listen for what the server declares ({', '.join(sorted(wanted))}) "
                f"was refused: {dump(answered[0])}"
            )
        raise CheckSkipped(
            f"the listen was not acknowledged within {probe.options.timeout:g}s"
            + (f" (answered {dump(answered[0])})" if answered else "")
        )
    return rid


async def close_while_listening(probe: Probe) -> str:
    wire = await probe.open()
    offered = selectors(await _capabilities(probe, wire))
    if isinstance(wire, StdioWire):
        rid = await _open_listen(probe, wire, offered)
        started = trio.current_time()
        await wire.close_input()
        status = await wire.wait_exit(probe.options.exit_timeout)
        if status is None:
            raise CheckFailed(
                f"still running {probe.options.exit_timeout:g}s after end of input with a listen "
                "in flight (closing waits for the listen, which waits for the close)"
            )
        elapsed = trio.current_time() - started
        final = wire.since(0, is_response_to(rid))
        said = (
            "its listen answered complete"
            if final and isinstance(final[0].get("result"), dict)
            else "its listen ended without a final result"
        )
        return f"exited {elapsed:.2f}s after end of input with a listen in flight; {said}"
    rounds = 2
    for _ in range(rounds):
        rid = await _open_listen(probe, wire, offered)
        await _end(wire, rid)
        await probe.still_answers(wire)
    return f"{rounds} listen streams opened and closed by the client; answered after each"


ERA = frozenset({MODERN})
CHECKS = (
    Check(
        "listen.empty",
        "a listen that accepts nothing is answered at once (draft)",
        ("SB-15", "SB-02"),
        empty,
        eras=ERA,
    ),
    Check(
        "listen.unsupported",
        "listen is refused -32601 exactly when there is nothing to listen to (draft)",
        ("SB-16", "HM-17"),
        unsupported,
        eras=ERA,
    ),
    Check(
        "listen.close",
        "ending a connection or stream with a listen in flight neither hangs nor wedges",
        ("SB-09", "HM-13"),
        close_while_listening,
        eras=ERA,
        fresh=True,
    ),
)
