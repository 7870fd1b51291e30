"""Streamable HTTP: the session rules, Origin and Host, content types, DELETE,
notifications, and the 2026-07-28 headers.

Spec: HT-02, HT-08, HT-09, HT-31, HT-32, HT-34, HM-02, HM-06, HM-16, HM-17, HM-22.
"""

from __future__ import annotations

from typing import Any

import httpx
import orjson

from ...protocol import Notification, Request, encode
from .._definition import Check
from .._http import ACCEPT, HttpWire, modern_headers
from .._model import HTTP, LEGACY, MODERN
from .._probe import Probe
from .._target import HttpTarget
from .._wire import new_id
from ._common import dump, expect

EVIL_ORIGIN = "http://evil.example"
EVIL_HOST = "evil.example"


async def _wire(probe: Probe) -> tuple[HttpWire, HttpTarget]:
    wire = await probe.open()
    assert isinstance(wire, HttpWire)
    assert isinstance(probe.target, HttpTarget)
    return wire, probe.target


async def _post(
    wire: HttpWire, target: HttpTarget, body: bytes, headers: dict[str, str]
) -> tuple[httpx.Response, Any]:
    """POST *body*, recorded; the response (read whole) and its JSON body (or None)."""
    wire.note("->", f"POST {' '.join(f'{k}: {v}' for k, v in headers.items())} {body.decode()}")
    response = await target.client.post(target.url, content=body, headers=headers)
    wire.note("<-", f"HTTP {response.status_code} {response.headers.get('content-type', '')}")
    text = response.text
    if text.strip():
        wire.note("<-", text)
    parsed: Any = None
    if response.headers.get("content-type", "").startswith("application/json"):
        try:
            parsed = orjson.loads(response.content)
        except orjson.JSONDecodeError:
            parsed = None
    return response, parsed


def _opening(probe: Probe) -> bytes:
    """A first request that needs no session: initialize, or a discover in 2026-07-28."""
    if probe.era == MODERN:
        return encode(Request(new_id(), "server/discover", probe.params()))
    return encode(Request(new_id(), "initialize", probe.initialize_params()))


def _base_headers(probe: Probe, body: bytes) -> dict[str, str]:
    headers = {"Content-Type": "application/json", "Accept": ACCEPT}
    if probe.era == MODERN:
        headers.update(modern_headers(orjson.loads(body)))
    return headers


async def session_rules(probe: Probe) -> str:
    wire, target = await _wire(probe)
    if wire.session_id is None:
        return "no Mcp-Session-Id issued (a server without sessions): nothing to hold it to"
    ping = encode(Request(new_id(), "ping"))
    headers = wire.headers_for(None)
    del headers["Mcp-Session-Id"]
    response, _ = await _post(wire, target, ping, headers)
    expect(
        response.status_code == 400,
        f"a request without the session id got {response.status_code}, not 400",
    )
    headers["Mcp-Session-Id"] = f"check-unknown-{new_id()}"
    response, _ = await _post(wire, target, ping, headers)
    expect(
        response.status_code == 404,
        f"a request with an unknown session id got {response.status_code}, not 404",
    )
    await probe.still_answers(wire)
    return "no session id: 400; an unknown one: 404; the session goes on"


async def origin_and_host(probe: Probe) -> str:
    wire, target = await _wire(probe)
    body = _opening(probe)
    response, _ = await _post(
        wire, target, body, {**_base_headers(probe, body), "Origin": EVIL_ORIGIN}
    )
    expect(response.status_code == 403, f"Origin {EVIL_ORIGIN} got {response.status_code}, not 403")
    response, _ = await _post(wire, target, body, {**_base_headers(probe, body), "Host": EVIL_HOST})
    expect(
        400 <= response.status_code < 500,
        f"Host {EVIL_HOST} got {response.status_code}, not a refusal (DNS rebinding)",
    )
    host_status = response.status_code
    return f"a foreign Origin got 403, a foreign Host {host_status}"


async def content_types(probe: Probe) -> str:
    wire, target = await _wire(probe)
    await probe.still_answers(wire)  # one request answered the ordinary way
    body = _opening(probe)
    # How the server meets a body that says it is not JSON, and a client that
    # accepts neither JSON nor SSE: reported, not judged (the spec puts these
    # MUSTs on the client).
    headers = {**_base_headers(probe, body), "Content-Type": "text/plain"}
    plain, _ = await _post(wire, target, body, headers)
    headers = {**_base_headers(probe, body), "Accept": "text/html"}
    html, _ = await _post(wire, target, body, headers)
    answered = [p for p in wire.posts if p.request_id is not None and p.status == 200]
    types = {p.content_type for p in answered}
    expect(
        answered and types <= {"application/json", "text/event-stream"},
        f"requests were answered with content types {sorted(types)}",
    )
    return (
        f"requests answered with {', '.join(sorted(types))}; a text/plain body got "
        f"{plain.status_code}, Accept: text/html got {html.status_code}"
    )


async def notification_accepted(probe: Probe) -> str:
    wire, target = await _wire(probe)
    body = encode(Notification("notifications/cancelled", {"requestId": f"never-{new_id()}"}))
    headers = wire.headers_for(orjson.loads(body))
    response, _ = await _post(wire, target, body, headers)
    expect(response.status_code == 202, f"a notification got {response.status_code}, not 202")
    expect(not response.content.strip(), f"the 202 has a body: {response.text[:100]!r}")
    return "a notification got 202 with no body"


async def delete_session(probe: Probe) -> str:
    wire, target = await _wire(probe)
    if wire.session_id is None:
        return "no Mcp-Session-Id issued (a server without sessions): nothing to delete"
    headers = wire.headers_for(None)
    wire.note("->", f"DELETE Mcp-Session-Id: {wire.session_id}")
    response = await target.client.delete(target.url, headers=headers)
    wire.note("<-", f"HTTP {response.status_code}")
    if response.status_code == 405:
        return "DELETE answered 405 (the server does not let clients end sessions)"
    expect(200 <= response.status_code < 300, f"DELETE got {response.status_code}")
    ping = encode(Request(new_id(), "ping"))
    response, _ = await _post(wire, target, ping, headers)
    expect(
        response.status_code == 404,
        f"a request on the deleted session got {response.status_code}, not 404",
    )
    wire.session_id = None
    return "DELETE ended the session; a request on it then got 404"


async def modern_header_rules(probe: Probe) -> str:
    wire, target = await _wire(probe)
    body = encode(Request(new_id(), "tools/list", probe.params()))
    headers = {**_base_headers(probe, body), "Mcp-Method": "prompts/list"}
    response, parsed = await _post(wire, target, body, headers)
    code = (parsed or {}).get("error", {}).get("code") if isinstance(parsed, dict) else None
    expect(
        response.status_code == 400 and code == -32020,
        f"Mcp-Method disagreeing with the body got {response.status_code} {dump(parsed)}, "
        "not 400 with -32020",
    )
    body = encode(Request(new_id(), "check/no-such-method", probe.params()))
    response, parsed = await _post(wire, target, body, _base_headers(probe, body))
    code = (parsed or {}).get("error", {}).get("code") if isinstance(parsed, dict) else None
    expect(
        response.status_code == 404 and code == -32601,
        f"an unknown method got {response.status_code} {dump(parsed)}, not 404 with -32601",
    )
    meta = {**probe.meta(), "io.modelcontextprotocol/protocolVersion": "2099-01-01"}
    body = encode(Request(new_id(), "tools/list", {"_meta": meta}))
    response, parsed = await _post(wire, target, body, _base_headers(probe, body))
    code = (parsed or {}).get("error", {}).get("code") if isinstance(parsed, dict) else None
    expect(
        response.status_code == 400 and code == -32022,
        f"an unknown version got {response.status_code} {dump(parsed)}, not 400 with -32022",
    )
    return (
        "a header disagreeing with the body: 400/-32020; unknown method: 404/-32601; "
        "unknown version: 400/-32022"
    )


ONLY_HTTP = frozenset({HTTP})
CHECKS = (
    Check(
        "http.session",
        "session id rules: missing 400, unknown 404",
        ("HT-31", "HT-32"),
        session_rules,
        eras=frozenset({LEGACY}),
        transports=ONLY_HTTP,
        fresh=True,
    ),
    Check(
        "http.origin-host",
        "a foreign Origin gets 403, a foreign Host is refused",
        ("HT-02", "HM-02"),
        origin_and_host,
        transports=ONLY_HTTP,
        fresh=True,
    ),
    Check(
        "http.content-types",
        "requests are answered with JSON or SSE",
        ("HT-09", "HM-07"),
        content_types,
        transports=ONLY_HTTP,
        fresh=True,
    ),
    Check(
        "http.notification",
        "a notification gets 202 and no body",
        ("HT-08", "HM-06"),
        notification_accepted,
        transports=ONLY_HTTP,
        fresh=True,
    ),
    Check(
        "http.delete",
        "DELETE ends the session",
        ("HT-34", "HT-32"),
        delete_session,
        eras=frozenset({LEGACY}),
        transports=ONLY_HTTP,
        fresh=True,
    ),
    Check(
        "http.modern-headers",
        "2026-07-28 headers: mismatch, unknown method, unknown version",
        ("HM-15", "HM-16", "HM-17", "HM-22"),
        modern_header_rules,
        eras=frozenset({MODERN}),
        transports=ONLY_HTTP,
        fresh=True,
    ),
)
