"""Handshake-era opening: the three steps, the version answer, ping first, one initialize.

Spec: LC-01, LC-02, LC-03, LC-04, LC-06, LC-08, PI-01, PI-02.
"""

from __future__ import annotations

import orjson
import trio

from .._definition import Check
from .._model import LEGACY, STDIO, CheckSkipped
from .._probe import Probe
from .._wire import is_response_to
from ._common import dump, error_of, expect

#: How long the checker waits between ``initialize``'s answer and
#: ``initialized`` for the server to speak out of turn.
OUT_OF_TURN_WATCH = 0.2
OLDER_VERSION = "2024-11-05"
UNKNOWN_VERSION = "1999-01-01"


async def three_steps(probe: Probe) -> str:
    wire = await probe.open(handshake=False)
    rid = await wire.send_request("initialize", probe.initialize_params())
    answer = await probe.answer(rid, wire=wire)
    result = answer.get("result")
    expect(isinstance(result, dict), f"initialize was not answered with a result: {dump(answer)}")
    assert isinstance(result, dict)
    version = result.get("protocolVersion")
    expect(
        isinstance(version, str), f"the initialize result has no protocolVersion: {dump(result)}"
    )
    expect(isinstance(result.get("capabilities"), dict), "the result has no capabilities object")
    info = result.get("serverInfo")
    expect(isinstance(info, dict) and "name" in info, "the result has no serverInfo with a name")
    await trio.sleep(OUT_OF_TURN_WATCH)
    early = [
        m
        for m in wire.received
        if "method" in m and m["method"] not in ("ping", "notifications/message")
    ]
    expect(not early, f"the server sent {dump(early[:1])} before notifications/initialized")
    await wire.send_notification("notifications/initialized")
    await probe.still_answers(wire)
    return f"initialize answered with {version}, nothing but ping or logging before initialized"


async def counter_offer(probe: Probe) -> str:
    wire = await probe.open(handshake=False)
    answer = await probe.request("initialize", probe.initialize_params(UNKNOWN_VERSION), wire=wire)
    result = answer.get("result")
    expect(
        isinstance(result, dict),
        f"initialize with version {UNKNOWN_VERSION} was refused, not counter-offered: "
        f"{dump(answer)}",
    )
    assert isinstance(result, dict)
    version = result.get("protocolVersion")
    expect(
        isinstance(version, str) and version != UNKNOWN_VERSION,
        f"the answer to {UNKNOWN_VERSION} is not another version: {dump(result)}",
    )
    return f"{UNKNOWN_VERSION} answered with the counter-offer {version}"


async def older_version(probe: Probe) -> str:
    wire = await probe.open(handshake=False)
    answer = await probe.request("initialize", probe.initialize_params(OLDER_VERSION), wire=wire)
    result = answer.get("result")
    expect(isinstance(result, dict), f"initialize with {OLDER_VERSION} was refused: {dump(answer)}")
    assert isinstance(result, dict)
    version = result.get("protocolVersion")
    expect(
        version == OLDER_VERSION,
        f"initialize with {OLDER_VERSION} was answered with {version!r}, not the same version",
    )
    return f"{OLDER_VERSION} kept"


async def ping_first(probe: Probe) -> str:
    wire = await probe.open(handshake=False)
    answer = await probe.request("ping", wire=wire)
    result = answer.get("result")
    # Empty, as the spec asks; every result may still carry _meta.
    expect(
        isinstance(result, dict) and set(result) <= {"_meta"},
        f"ping before initialize got {dump(answer)}, not an empty result",
    )
    await probe.handshake(wire)
    return "ping answered {} before initialize; the handshake followed"


async def second_initialize(probe: Probe) -> str:
    # On the era's shared connection, after every other check that uses it
    # (a server that wrongly starts over must not disturb them).
    wire = probe.wire
    await probe.still_answers(wire)  # the session is in operation: its handshake is done
    if getattr(wire, "session_id", "stdio") is None:
        raise CheckSkipped(
            "the server issues no session id: each POST stands alone, so a second "
            "initialize is another opening"
        )
    rid = await wire.send_request("initialize", probe.initialize_params())
    answer = await probe.answer(rid, wire=wire)
    expect(
        "error" in answer,
        f"a second initialize was answered with a result: {orjson.dumps(answer).decode()[:200]}",
    )
    expect(is_response_to(rid)(answer), "the refusal does not carry the request's id")
    await probe.still_answers(wire)
    return f"a second initialize refused with {error_of(answer).get('code')}; the session goes on"


ERA = frozenset({LEGACY})
CHECKS = (
    Check(
        "handshake.three-steps",
        "initialize, initialized, nothing else first",
        ("LC-01", "LC-02", "LC-03", "LC-04", "LC-06"),
        three_steps,
        eras=ERA,
        fresh=True,
    ),
    Check(
        "handshake.counter-offer",
        "an unknown version gets a counter-offer",
        ("LC-08",),
        counter_offer,
        eras=ERA,
        fresh=True,
    ),
    Check(
        "handshake.older-version",
        f"an older version ({OLDER_VERSION}) is kept",
        ("LC-08",),
        older_version,
        eras=ERA,
        fresh=True,
    ),
    Check(
        "handshake.ping-first",
        "ping before initialize is answered",
        ("PI-01", "PI-02", "LC-05"),
        ping_first,
        eras=ERA,
        # Over HTTP a request before initialize has no session to be in (HT-31).
        transports=frozenset({STDIO}),
        fresh=True,
    ),
    Check(
        "handshake.second-initialize",
        "a second initialize is refused",
        ("LC-01", "LC-11"),
        second_initialize,
        eras=ERA,
        last=True,
    ),
)
