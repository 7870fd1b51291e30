"""Pieces shared by the HTTP transports: headers, message sniffing, the
Origin/Host policy, and JSON-RPC error bodies for HTTP refusals.

Nothing here does I/O.

Spec: HT-02, HT-03, HT-08, HT-28, HT-37, SS-01, SEC-01.
"""

from __future__ import annotations

import functools
import ipaddress
import logging
import secrets
from collections.abc import Collection, Iterable
from typing import Any

import orjson

from ...protocol import REVISIONS, SUPPORTED_VERSIONS, RequestId, is_valid_request_id
from ...protocol._revisions import DEFAULT_HTTP_VERSION as DEFAULT_HTTP_VERSION  # HT-36

#: Header names (lower case, as ASGI gives them).
SESSION_HEADER = "mcp-session-id"
VERSION_HEADER = "mcp-protocol-version"
LAST_EVENT_ID_HEADER = "last-event-id"

#: Revisions that send priming events and may close connections for polling (HT-10).
PRIMING_VERSIONS = frozenset(v for v, revision in REVISIONS.items() if revision.sse_priming)

Headers = list[tuple[bytes, bytes]]

logger = logging.getLogger("trio_mcp.http")


def new_session_id() -> str:
    """A session id: 192 bits from the OS CSPRNG, URL-safe base64 (only 0x21-0x7E).

    Spec: HT-28, SEC-07.
    """
    return secrets.token_urlsafe(24)


def is_visible_ascii(value: str) -> bool:
    """True if *value* is non-empty and only has characters 0x21-0x7E (HT-28)."""
    return bool(value) and all(0x21 <= ord(c) <= 0x7E for c in value)


def header_values(headers: Iterable[tuple[bytes, bytes]], name: bytes) -> list[str]:
    """All values of header *name* (lower-case bytes), decoded as Latin-1."""
    return [v.decode("latin-1") for k, v in headers if k == name]


def one_header(headers: Iterable[tuple[bytes, bytes]], name: bytes) -> str | None:
    """The single value of *name*; raises ValueError if it is repeated."""
    values = header_values(headers, name)
    if len(values) > 1:
        raise ValueError(f"duplicate {name.decode()} header")
    return values[0] if values else None


def accept_types(value: str | None) -> set[str]:
    """The media ranges listed in an ``Accept`` value (a comma list), lower case,
    without their parameters.

    Only for ``Accept``: ``Content-Type`` names ONE media type and is parsed by
    :func:`parse_media_type` (splitting it on commas let
    ``text/plain; x=,application/json`` through, reliability O-13).
    """
    if not value:
        return set()
    return {part.split(";", 1)[0].strip().lower() for part in value.split(",") if part.strip()}


def accepts(accept: str | None, media_type: str) -> bool:
    """Does an ``Accept`` value admit *media_type* (wildcards included)?"""
    return admits(accept_types(accept), media_type)


def admits(types: set[str], media_type: str) -> bool:
    """Do the media ranges *types* (:func:`accept_types`) admit *media_type*?
    For testing one ``Accept`` value for several types, parsed once."""
    major = media_type.split("/", 1)[0]
    return media_type in types or "*/*" in types or f"{major}/*" in types


#: RFC 9110 ``tchar``: what a token (type, subtype, parameter name or value) is made of.
_TCHARS = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_OWS = " \t"


def _is_token(value: str) -> bool:
    return bool(value) and all(c in _TCHARS for c in value)


def _quoted_string(text: str, pos: int) -> tuple[str, int] | None:
    """The value of the quoted-string opening at ``text[pos]`` and the index after it."""
    out: list[str] = []
    pos += 1
    while pos < len(text):
        char = text[pos]
        if char == '"':
            return "".join(out), pos + 1
        if char == "\\":
            pos += 1
            if pos == len(text):
                return None
            char = text[pos]
        if (ord(char) < 0x20 and char != "\t") or ord(char) == 0x7F:
            return None
        out.append(char)
        pos += 1
    return None  # unterminated


def parse_media_type(value: str | None) -> tuple[str, dict[str, str]] | None:
    """Parse ONE media type, as in ``Content-Type`` (RFC 9110 8.3.1, 5.6).

    ``type "/" subtype *( OWS ";" OWS [ name "=" ( token / quoted-string ) ] )``.
    Returns the lower-case ``type/subtype`` and the parameters (lower-case
    names, values as written, quotes removed), or None when *value* is missing
    or malformed. A comma is no separator here, so
    ``text/plain; x=,application/json`` is malformed (its parameter value is not
    a token), never ``application/json``.
    """
    if value is None:
        return None
    head, _, rest = value.partition(";")
    major, slash, minor = head.strip(_OWS).partition("/")
    if not slash or not _is_token(major) or not _is_token(minor):
        return None
    params: dict[str, str] = {}
    pos = 0
    while True:
        while pos < len(rest) and rest[pos] in _OWS:
            pos += 1
        if pos == len(rest):
            break
        if rest[pos] == ";":  # an empty parameter is allowed
            pos += 1
            continue
        name, eq, _ = rest[pos:].partition("=")
        if not eq or not _is_token(name):
            return None
        pos += len(name) + 1
        if pos < len(rest) and rest[pos] == '"':
            quoted = _quoted_string(rest, pos)
            if quoted is None:
                return None
            param, pos = quoted
        else:
            end = rest.find(";", pos)
            end = len(rest) if end == -1 else end
            param = rest[pos:end].rstrip(_OWS)
            if not _is_token(param):
                return None
            pos = end
        params[name.lower()] = param
        while pos < len(rest) and rest[pos] in _OWS:
            pos += 1
        if pos < len(rest):
            if rest[pos] != ";":
                return None
            pos += 1
    return f"{major}/{minor}".lower(), params


def is_json_content_type(value: str | None) -> bool:
    """Is *value* (a ``Content-Type``) exactly ``application/json``, parameters allowed?

    Browsers send ``text/plain``, ``application/x-www-form-urlencoded`` and
    ``multipart/form-data`` cross-site without a CORS preflight; requiring the
    one JSON type keeps such "simple" requests out (reliability O-13, A4).
    ``application/json-seq`` or ``application/jsonx`` are other types.

    Spec: HT-02, SEC-01.
    """
    parsed = parse_media_type(value)
    return parsed is not None and parsed[0] == "application/json"


def error_body(code: int, message: str, request_id: RequestId | None = None) -> bytes:
    """A JSON-RPC error response for an HTTP refusal (id null when unknown)."""
    return orjson.dumps(
        {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
    )


def batch_frames(body: bytes, parsed: Any) -> list[bytes]:
    """The frames of a JSON body the server sent: itself, or each member of a batch.

    A batch's members are written back with orjson, which writes at most 255
    levels of nesting (it reads 1024): a member nested deeper is dropped (so
    a call it answered fails when its response ends: HT-09, HM-14), rather
    than raising ``TypeError`` out of the transport. A body that is no batch
    is passed on as it came.
    """
    if not isinstance(parsed, list):
        return [body]
    frames = []
    for item in parsed:
        try:
            frames.append(orjson.dumps(item))
        except orjson.JSONEncodeError:  # nested too deeply to write back
            logger.debug("dropped a batch member nested too deeply to pass on")
    return frames


# ------------------------------------------------------------------ sniffing


#: The key of every value that is no valid request id (see :func:`id_key`).
NOT_AN_ID_KEY: tuple[bool, Any] = (False, "not a request id")


def id_key(request_id: Any) -> tuple[bool, Any]:
    """A dict key for a request id that keeps ``1`` and ``"1"`` apart.

    Only a valid id (a string, or an integer that is not a bool) is its own
    key. Anything else a peer may have put in an ``id`` (a list, an object,
    ``true``, ``1.0``, null) is :data:`NOT_AN_ID_KEY`, which no valid id has:
    a list is unhashable (the lookup would raise), and ``True == 1.0 == 1`` in
    Python, so such an answer would pass for the answer to call ``1``,
    which the session (refusing the invalid id, J-07) never sees answered.
    """
    if not is_valid_request_id(request_id):
        return NOT_AN_ID_KEY
    return (isinstance(request_id, str), request_id)


class Sniffed:
    """What the HTTP layer needs to know about a POST body (one message or a batch)."""

    __slots__ = (
        "cancelled_ids",
        "has_initialize",
        "notifications",
        "problem",
        "progress_tokens",
        "request_ids",
    )

    def __init__(self) -> None:
        self.request_ids: list[RequestId] = []
        self.progress_tokens: dict[tuple[bool, Any], RequestId] = {}
        self.has_initialize = False
        self.notifications = 0
        #: Request ids named by ``notifications/cancelled`` in the body.
        self.cancelled_ids: list[Any] = []
        #: Why the body is not a valid JSON-RPC message (None if it is).
        self.problem: str | None = None


def sniff(body: Any) -> Sniffed:
    """Classify a parsed POST body without typing its params.

    A request (string method and a valid id) needs a response stream;
    notifications and responses are accepted with 202. Anything else is a
    malformed message, refused by the HTTP layer with 400 before it reaches
    any session.
    """
    out = Sniffed()
    items = body if isinstance(body, list) else [body]
    if isinstance(body, list) and not body:
        out.problem = "empty batch"
        return out
    for item in items:
        if not isinstance(item, dict) or item.get("jsonrpc") != "2.0":
            out.problem = "not a JSON-RPC 2.0 message"
            return out
        method = item.get("method")
        if method is not None:
            if not isinstance(method, str):
                out.problem = "method must be a string"
                return out
            if "id" in item:
                rid = item["id"]
                if not is_valid_request_id(rid):
                    out.problem = "request id must be a string or an integer"
                    return out
                out.request_ids.append(rid)
                if method == "initialize":
                    out.has_initialize = True
                params = item.get("params")
                meta = params.get("_meta") if isinstance(params, dict) else None
                token = meta.get("progressToken") if isinstance(meta, dict) else None
                if isinstance(token, str | int) and not isinstance(token, bool):
                    out.progress_tokens[id_key(token)] = rid
            else:
                out.notifications += 1
                params = item.get("params")
                if method == "notifications/cancelled" and isinstance(params, dict):
                    out.cancelled_ids.append(params.get("requestId"))
        elif "result" in item or "error" in item:
            out.notifications += 1  # a response: accepted like a notification
        else:
            out.problem = "neither a request, a notification nor a response"
            return out
    if len({id_key(r) for r in out.request_ids}) != len(out.request_ids):
        out.problem = "duplicate request id in one batch"
    return out


# ------------------------------------------------------------ Origin and Host

_LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")


def is_loopback_host(host: str) -> bool:
    """Is *host* (a bind address or host name, no port) a loopback address?"""
    host = host.strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


# Cached (bounded): asked for every request, of the few addresses a server is
# bound to (the ASGI ``server`` entry, never a client's input).
@functools.lru_cache(maxsize=64)
def _listener_hosts(host: str, port: int) -> frozenset[str] | None:
    """The Host values a listener bound to *host*:*port* accepts by default:
    its loopback names with the port when it is bound to loopback, else None
    (any: see ``OriginPolicy``)."""
    if not is_loopback_host(host):
        return None
    hosts = {f"{name}:{port}" for name in _LOOPBACK_NAMES}
    if port in (80, 443):
        # Clients leave a default port out of Host (and Origin).
        hosts.update(_LOOPBACK_NAMES)
    return frozenset(hosts)


def _host_matches(value: str, allowed: Collection[str]) -> bool:
    value = value.lower()
    if value in allowed:
        return True
    # "name:*" matches the name with any port, and without one (a default
    # port), for bracketed IPv6 literals and names alike.
    has_port = ":" in value and not value.endswith("]")
    name = value.rpartition(":")[0] if has_port else value
    return bool(name) and f"{name}:*" in allowed


class OriginPolicy:
    """Which ``Host`` and ``Origin`` values a listener accepts (DNS rebinding defence).

    Args:
        allowed_hosts: ``Host`` header values, ``name:port`` or ``name:*``. None
            means automatic: when the listener is bound to a loopback address,
            only ``localhost``, ``127.0.0.1`` and ``[::1]`` with the bound port
            (or without one, when that is 80 or 443);
            bound elsewhere (e.g. ``0.0.0.0``), any Host; bound address
            unknown, none (see below).
        allowed_origins: full origins (``scheme://host[:port]``), or ``"*"`` for
            any (not recommended). None means automatic: an ``Origin`` must be
            the origin of an allowed Host (``http`` or ``https``), and, when the
            Host is not restricted, the same origin as the request's own Host.

    Matching is exact after lower-casing; a trailing dot (``localhost.``) is a
    different name and is refused. ``Origin: null`` and repeated Origin headers
    are refused. A missing Origin (a non-browser client) is accepted.

    Unknown bound address: when the listener's address is not known (an ASGI scope
    without ``server``, as some hosts send, or ``(path, None)`` for a Unix socket), the
    automatic mode cannot tell a loopback bind from a public one, so it refuses every
    request (421) rather than accept any Host, which would let a DNS-rebinding page
    through (its Origin equals its Host). Such deployments name their hosts with
    *allowed_hosts* (e.g. ``{"localhost:8000"}`` or ``{"localhost:*"}``).

    Spec: HT-02, SS-01, SEC-01, O-10.
    """

    def __init__(
        self,
        *,
        allowed_hosts: Collection[str] | None = None,
        allowed_origins: Collection[str] | None = None,
    ) -> None:
        self.allowed_hosts = None if allowed_hosts is None else {h.lower() for h in allowed_hosts}
        self.allowed_origins = (
            None if allowed_origins is None else {o.lower().rstrip("/") for o in allowed_origins}
        )

    def hosts_for(self, server: tuple[str, int | None] | None) -> set[str] | frozenset[str] | None:
        """The Host values accepted by a listener bound to *server* (None: any).

        *server* is the ASGI ``server`` entry: ``(host, port)``, ``(path, None)``
        for a Unix socket, or None. With no *allowed_hosts* and no known
        ``(host, port)``: the empty set (none).
        """
        if self.allowed_hosts is not None:
            return self.allowed_hosts
        if server is None or server[1] is None:
            return frozenset()  # unknown bind: refuse rather than guess (O-10)
        return _listener_hosts(str(server[0]), server[1])

    def check(
        self, headers: Iterable[tuple[bytes, bytes]], server: tuple[str, int | None] | None
    ) -> tuple[int, str] | None:
        """None if the request may proceed, else ``(status, reason)``: 400, 403 or 421."""
        headers = list(headers)
        hosts = header_values(headers, b"host")
        if len(hosts) != 1 or not hosts[0]:
            return 400, "missing or repeated Host header"
        host = hosts[0].lower()
        allowed_hosts = self.hosts_for(server)
        if self.allowed_hosts is None and (server is None or server[1] is None):
            return 421, "Host not verifiable: the bound address is unknown (set allowed_hosts)"
        if allowed_hosts is not None and not _host_matches(host, allowed_hosts):
            return 421, "Host not allowed"
        origins = header_values(headers, b"origin")
        if not origins:
            return None
        if len(origins) > 1:
            return 403, "repeated Origin header"
        origin = origins[0].lower().rstrip("/")
        if origin == "null":
            return 403, "Origin not allowed"
        if self.allowed_origins is not None:
            if "*" in self.allowed_origins or origin in self.allowed_origins:
                return None
            return 403, "Origin not allowed"
        scheme, sep, rest = origin.partition("://")
        if not sep or scheme not in ("http", "https") or not rest:
            return 403, "Origin not allowed"
        if allowed_hosts is not None:
            return None if _host_matches(rest, allowed_hosts) else (403, "Origin not allowed")
        return None if rest == host else (403, "Origin not allowed")


def check_version(value: str | None) -> str | None:
    """None if *value* (an ``MCP-Protocol-Version`` header) is absent or supported;
    else the reason for a 400 (HT-37)."""
    if value is None or value in SUPPORTED_VERSIONS:
        return None
    return f"Unsupported MCP-Protocol-Version {value[:64]!r}"
