"""2026-07-28: discovery, ``_meta`` on every request, unknown versions, the era of a connection.

Spec: VR-02, VR-04, VR-09, ME-06, ME-07, BP-14.
"""

from __future__ import annotations

from .._definition import Check
from .._model import BOTH_ERAS, MODERN, CheckSkipped
from .._probe import MODERN_VERSION, Probe
from ._common import dump, error_of, expect

UNKNOWN_VERSION = "2099-01-01"


async def discover(probe: Probe) -> str:
    answer = await probe.request("server/discover")
    result = answer.get("result")
    expect(isinstance(result, dict), f"server/discover got {dump(answer)}")
    assert isinstance(result, dict)
    versions = result.get("supportedVersions")
    expect(
        isinstance(versions, list) and MODERN_VERSION in versions,
        f"supportedVersions does not list {MODERN_VERSION}: {dump(result)}",
    )
    expect(isinstance(result.get("capabilities"), dict), "the result has no capabilities")
    expect("resultType" in result, f"the result has no resultType: {dump(result)}")
    return f"server/discover lists {', '.join(map(str, versions or []))}"


async def meta_required(probe: Probe) -> str:
    # The version is kept (so the request is a 2026-07-28 one, never taken
    # for a handshake-era request before initialize); the capabilities go.
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN_VERSION}
    rid = await probe.wire.send_request("tools/list", {"_meta": meta})
    answer = await probe.answer(rid)
    code = error_of(answer).get("code")
    expect(
        code == -32602,
        f"tools/list without _meta clientCapabilities got {dump(answer)}, not -32602",
    )
    return "a request whose _meta lacks clientCapabilities refused with -32602"


async def unknown_version(probe: Probe) -> str:
    meta = probe.meta()
    meta["io.modelcontextprotocol/protocolVersion"] = UNKNOWN_VERSION
    rid = await probe.wire.send_request("tools/list", {"_meta": meta})
    answer = await probe.answer(rid)
    error = error_of(answer)
    expect(error.get("code") == -32022, f"version {UNKNOWN_VERSION} got {dump(answer)}, not -32022")
    data = error.get("data")
    supported = data.get("supported") if isinstance(data, dict) else None
    expect(
        isinstance(supported, list) and supported,
        f"the -32022 error lists no supported versions: {dump(error)}",
    )
    listed = ", ".join(map(str, supported or []))
    return f"{UNKNOWN_VERSION} refused with -32022, supported: {listed}"


async def era_from_first_message(probe: Probe) -> str:
    eras = probe.findings.get("eras", ())
    if set(eras) != set(BOTH_ERAS):
        raise CheckSkipped(f"not a dual-era server (it speaks: {', '.join(sorted(eras))})")
    # The handshake-era connection of this run opened with initialize and got
    # a handshake version; a connection opened with a modern request is served
    # in 2026-07-28 (a server/discover probe would decide nothing, VR-09).
    opened = probe.findings.get("initialize-version")
    expect(
        isinstance(opened, str) and opened != MODERN_VERSION,
        f"the connection opened with initialize got {opened!r}",
    )
    # A list the server declares (a server of extensions alone may have no
    # tools): the first request must be one it answers.
    declared = probe.findings.get("initialize-capabilities")
    lists = [
        f"{name}/list"
        for name in ("tools", "prompts", "resources")
        if isinstance(declared, dict) and name in declared
    ]
    if not lists:
        raise CheckSkipped("the server declares no tools, prompts or resources to list")
    modern = await probe.open(handshake=False)
    answer = await probe.request(lists[0], wire=modern)
    result = answer.get("result")
    expect(
        isinstance(result, dict) and result.get("resultType") == "complete",
        f"a connection opened with a 2026-07-28 {lists[0]} got {dump(answer)}",
    )
    return f"an initialize opening got {opened}; a 2026-07-28 opening was served statelessly"


ERA = frozenset({MODERN})
CHECKS = (
    Check("modern.discover", "server/discover", ("VR-04", "BP-14"), discover, eras=ERA),
    Check("modern.meta-required", "_meta is required", ("ME-06", "ME-07"), meta_required, eras=ERA),
    Check(
        "modern.unknown-version",
        "an unknown version gets -32022",
        ("VR-02",),
        unknown_version,
        eras=ERA,
    ),
    Check(
        "modern.era-by-first-message",
        "a dual-era server picks the era from the first message",
        ("VR-08", "VR-09"),
        era_from_first_message,
        eras=ERA,
        fresh=True,
    ),
)
