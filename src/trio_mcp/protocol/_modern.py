"""The 2026-07-28 era, as one side of a connection sees it.

Theory of operation
-------------------
2026-07-28 has no handshake and no session (``basic/versioning``,
``basic/meta``): every request names its protocol version and the client's
capabilities in its own ``_meta``, and is accepted or refused on its own.

1. **The opening.** A client chooses the era by probing: ``server/discover``
   (:meth:`ModernEra.discover_params`; it may be sent before the era is chosen,
   and does not choose it, SI-14, DS-05); its answer starts the era
   (:meth:`ModernEra.start`, the lifecycle's ``START_MODERN``). A server's
   opening decides (VR-09): a request naming a 2026-07-28 version in
   ``_meta``, or a method only 2026-07-28 has, takes this era
   (:meth:`ModernEra.opens`), and the first one other than
   ``server/discover`` moves the connection to MODERN (``RECV_MODERN``).
2. **Every request carries its ``_meta``.** The client adds the version, its
   capabilities and its ``clientInfo`` to each request (ME-06, ME-08;
   :attr:`ModernEra.request_meta`, and the log level asked for, ME-15).
3. **The server's checks**, each refusal with the request's id, everything read
   from *that* request's ``_meta`` (ST-01; :meth:`ModernEra.check_request`):
   ``initialize`` once the era is decided (-32600, VR-09); the required
   ``_meta`` fields (-32602 naming them, ME-07); the version (-32022 with
   ``supported`` and ``requested``, VR-02); the method (-32601); an
   extension's method that we do not offer (-32601) or that the request did
   not declare (-32021, ME-09, SEP-2663); the optional ``clientInfo`` and
   ``logLevel`` (-32602, LG-08). The checks both eras share come after (the
   capability gate, the params, the progress token).
4. **The result.** ``server/discover`` answers with every version we speak,
   our capabilities and instructions (DS-01..DS-03). Every result gets
   ``resultType``, ``serverInfo`` in ``_meta`` (ME-11) and, when complete and
   cacheable, the cache hints (CA-01) on the way out
   (:meth:`ModernEra.result`); the client reads ``resultType`` back
   (:meth:`ModernEra.result_type`, A-21).
5. **Nobody answers the client.** Servers send no requests (PT-01), so a
   client writes no responses (SI-07): it is :attr:`ModernEra.silent`.

The era changes nothing but the :class:`~trio_mcp.protocol.Lifecycle` it is
given, its own outbound ``_meta`` and the request entries it is handed (that a
result asked for input; the ``RequestMeta`` made once): the connection records
the version and the peer it returns.
"""

from __future__ import annotations

import functools
from typing import Any

from .. import types as mcp_types
from ._era import MODERN_ONLY, Admission, Peer, Side
from ._errors import ErrorCode, LocalProtocolError
from ._lifecycle import Lifecycle, LifecycleEvent, Role, SessionState
from ._messages import ErrorObject, JSONObject, Request
from ._methods import METHODS, Kind, MethodSpec, custom_method, lookup
from ._requests import RequestEntry, RequestMeta
from ._revisions import Revision, modern_versions

# The reserved _meta keys of a 2026-07-28 request and result (types.versioning).
_VERSION_KEY = mcp_types.PROTOCOL_VERSION_META_KEY
_CAPABILITIES_KEY = mcp_types.CLIENT_CAPABILITIES_META_KEY
_CLIENT_INFO_KEY = mcp_types.CLIENT_INFO_META_KEY
_LOG_LEVEL_KEY = mcp_types.LOG_LEVEL_META_KEY
_SERVER_INFO_KEY = mcp_types.SERVER_INFO_META_KEY
_LOG_LEVELS = frozenset(level.value for level in mcp_types.LoggingLevel)
#: The cache hints of a result whose method has none declared: stale at once,
#: never shared (CA-01).
_NO_HINT = (0, "private")

#: Requests (method, version) that passed the method checks of
#: :meth:`ModernEra.check_request`: they read only the static method table,
#: so one cache serves every connection.
_MODERN_OK: dict[tuple[str, str], MethodSpec] = {}
#: The row of an outbound request for a method neither table knows (a
#: client's ``call()`` of a method the server defines): JSON both ways.
_UNKNOWN = custom_method("unknown/method", Kind.REQUEST)


#: Our 2026-07-28 versions per set of versions spoken: one tuple shared by
#: every connection that speaks the same set (bounded by the revision table).
_modern_versions = functools.cache(modern_versions)


def _opens_modern(method: str, params: JSONObject | None) -> bool:
    """Whether a request on a new server connection takes the modern path (VR-09):
    it names a version in ``_meta``, or its method exists only in 2026-07-28."""
    if method == "initialize":
        return False
    if method in MODERN_ONLY:
        return True
    meta = params.get("_meta") if params is not None else None
    return isinstance(meta, dict) and _VERSION_KEY in meta


class ModernEra:
    """The 2026-07-28 rules for one side of one connection.

    Args:
        side: this end of the connection.
        lifecycle: the connection's lifecycle, which the opening moves.
        discover_capabilities: server, the capabilities ``server/discover``
            shows where they differ from the side's (no ``tasks`` slot; its
            extensions in ``extensions``). None: the side's.
        cache_hints: server, ``(ttlMs, cacheScope)`` of each cacheable
            method's complete results that set none (CA-01); methods not listed
            get ``(0, "private")``: stale at once, never shared.
        result_server_info: server, put ``serverInfo`` in every result's
            ``_meta`` (ME-11).
    """

    __slots__ = (
        "_cache_hints",
        "_lifecycle",
        "_result_server_info",
        "_side",
        "discover_capabilities",
        "request_meta",
        "silent",
        "versions",
    )

    def __init__(
        self,
        side: Side,
        lifecycle: Lifecycle,
        *,
        discover_capabilities: JSONObject | None = None,
        cache_hints: dict[str, tuple[int, str]] | None = None,
        result_server_info: bool = True,
    ) -> None:
        self._side = side
        self._lifecycle = lifecycle
        #: Our 2026-07-28 versions, newest first.
        self.versions = _modern_versions(side.supported_versions)
        #: The capabilities ``server/discover`` shows (None: the side's).
        self.discover_capabilities = discover_capabilities
        # None when not given, not a fresh {} per connection: most have none.
        self._cache_hints = cache_hints
        self._result_server_info = result_server_info
        #: A client writes no responses in this era, not even errors (PT-01,
        #: SI-07). (Plain attributes, read on every message.)
        self.silent = side.role is Role.CLIENT
        #: Client, once the era started: the ``_meta`` every request carries
        #: (read it, never assign it: :meth:`start` and
        #: :meth:`add_request_meta` are its writers).
        self.request_meta: JSONObject | None = None

    # ------------------------------------------------------------- 1. the opening

    def opens(self, request: Request) -> bool:
        """Server, connection NEW: whether *request* takes this era (VR-09)."""
        return bool(self.versions) and _opens_modern(request.method, request.params)

    def meta(self, version: str) -> JSONObject:
        """Client: the ``_meta`` a request of ours carries (ME-06, ME-08)."""
        return {
            _VERSION_KEY: version,
            _CAPABILITIES_KEY: self._side.capabilities,
            _CLIENT_INFO_KEY: self._side.info,
        }

    def discover_params(self, version: str | None = None) -> JSONObject | None:
        """Client: the params of ``server/discover`` naming *version* (default:
        our newest 2026-07-28 version); None once the era started (every
        request carries our ``_meta`` then).

        Raises:
            LocalProtocolError: we speak no 2026-07-28 version.
        """
        version = version or (self.versions[0] if self.versions else None)
        if version is None:
            raise LocalProtocolError("no modern version to name in server/discover")
        if self.request_meta is not None:
            return None
        return {"_meta": self.meta(version)}

    def start(self, version: str, result: mcp_types.DiscoverResult) -> Peer:
        """Client: the era is this one, at *version*; returns the server as
        *result* shows it (DS-02: its capabilities, instructions and
        ``serverInfo``, taken only if it is an object, ME-01).

        Raises:
            LocalProtocolError: not a new client connection, or *version* is
                not one of our 2026-07-28 versions.
        """
        lifecycle = self._lifecycle
        if self._side.role is not Role.CLIENT or not lifecycle.accepts(LifecycleEvent.START_MODERN):
            raise LocalProtocolError("start_modern needs a new client connection")
        if version not in self.versions:
            raise LocalProtocolError(f"unsupported modern protocol version {version!r}")
        lifecycle.process(LifecycleEvent.START_MODERN)
        self.request_meta = self.meta(version)
        info = (result.meta or {}).get(_SERVER_INFO_KEY)
        return Peer(
            self._side.converter.unstructure(result.capabilities),
            dict(info) if isinstance(info, dict) else {},
            result.instructions,
        )

    # ----------------------------------------------- 2. every request's _meta

    def add_request_meta(self, key: str, value: Any) -> None:
        """Client: put *key* in the ``_meta`` of every later request (ME-15).

        Raises:
            LocalProtocolError: the era has not started on this client.
        """
        if self.request_meta is None:
            raise LocalProtocolError("per-request _meta exists only in the modern era")
        self.request_meta = {**self.request_meta, key: value}

    def asks_for_task(self, raw: JSONObject, revision: Revision | None) -> bool:
        """Whether outbound params *raw* let the peer answer with a task: their
        ``_meta`` declares the tasks extension (negotiated per request, SEP-2663)."""
        capabilities = (raw.get("_meta") or {}).get(_CAPABILITIES_KEY)
        extensions = capabilities.get("extensions") if isinstance(capabilities, dict) else None
        return isinstance(extensions, dict) and isinstance(
            extensions.get(mcp_types.TASKS_EXTENSION), dict
        )

    # ----------------------------------------------------- 3. the server's checks

    def check_request(
        self, request: Request, batched: bool, version: str | None
    ) -> Admission | ErrorObject:
        """The 2026-07-28 checks of an inbound request, in the module's order
        (the negotiated *version* counts for nothing: the request names its own).

        Spec: ME-06, ME-07, ME-09, VR-01, VR-02, VR-09, ST-01, LG-08.
        """
        method = request.method
        params = request.params
        state = self._lifecycle.state
        if method == "initialize" and state is SessionState.MODERN:
            return ErrorObject(
                int(ErrorCode.INVALID_REQUEST),
                "This connection already speaks 2026-07-28 (every request carries its "
                "version in _meta); initialize is not accepted on it",
            )
        meta = params.get("_meta") if params is not None else None
        if not isinstance(meta, dict):
            meta = {}
        named = meta.get(_VERSION_KEY)
        capabilities = meta.get(_CAPABILITIES_KEY)
        # Both fields are checked on every request; the list naming the
        # missing ones is only built on the refusal path.
        if not isinstance(named, str) or not isinstance(capabilities, dict):
            missing = [
                key
                for key, value, kind in (
                    (_VERSION_KEY, named, str),
                    (_CAPABILITIES_KEY, capabilities, dict),
                )
                if not isinstance(value, kind)
            ]
            return ErrorObject(
                int(ErrorCode.INVALID_PARAMS),
                f"Missing or invalid _meta field(s) {', '.join(missing)}: every 2026-07-28 "
                "request names its protocol version and client capabilities",
                {"missing": missing},
            )
        if named not in self.versions:
            return ErrorObject(
                int(ErrorCode.UNSUPPORTED_PROTOCOL_VERSION),
                f"Unsupported protocol version {named[:64]!r}",
                {"supported": list(self._side.supported_versions), "requested": named},
            )
        key = (method, named)
        spec = _MODERN_OK.get(key)
        if spec is None:
            spec = METHODS.get(method)
            # A custom method's pass is never cached (the cache is shared by
            # every connection; custom methods are one connection's own).
            custom = spec is None and method in self._side.custom
            if custom:
                spec = self._side.custom[method]
            if (
                spec is None
                or spec.kind is not Kind.REQUEST
                or not spec.exists_in(named)
                or not spec.sender.allows(Role.CLIENT)
            ):
                return ErrorObject(int(ErrorCode.METHOD_NOT_FOUND), f"Method not found: {method}")
            if not custom:
                _MODERN_OK[key] = spec
        if spec.extension is not None:
            refusal = self._extension_refusal(method, spec.extension, capabilities)
            if refusal is not None:
                return refusal
        info = meta.get(_CLIENT_INFO_KEY)
        if info is not None and not isinstance(info, dict):
            return ErrorObject(
                int(ErrorCode.INVALID_PARAMS), f"_meta {_CLIENT_INFO_KEY} must be an object"
            )
        level = meta.get(_LOG_LEVEL_KEY)
        if level is not None and not (isinstance(level, str) and level in _LOG_LEVELS):
            return ErrorObject(
                int(ErrorCode.INVALID_PARAMS),
                f"_meta {_LOG_LEVEL_KEY} must be one of {', '.join(sorted(_LOG_LEVELS))}",
            )
        # A probe does not decide the era; anything else does (VR-09).
        opens = (
            LifecycleEvent.RECV_MODERN
            if state is SessionState.NEW and method != "server/discover"
            else None
        )
        return Admission(spec, named, (named, capabilities, info, level), opens)

    def _extension_refusal(
        self, method: str, extension: str, capabilities: JSONObject
    ) -> ErrorObject | None:
        """The refusal of a request for a method of *extension*, if any: -32601
        when we do not offer the extension (it is not in our ``extensions``);
        -32021 with ``requiredCapabilities`` when the request did not declare
        it in its own ``clientCapabilities.extensions`` (the extension is
        negotiated per request, whatever earlier requests said). Checked
        before the params, so an unknown task id never answers first.

        Spec: ME-09, SEP-2663 (TK-19).
        """
        ours = self.discover_capabilities
        offered = (self._side.capabilities if ours is None else ours).get("extensions")
        if not isinstance(offered, dict) or extension not in offered:
            return ErrorObject(int(ErrorCode.METHOD_NOT_FOUND), f"Method not found: {method}")
        declared = capabilities.get("extensions")
        if not isinstance(declared, dict) or not isinstance(declared.get(extension), dict):
            return ErrorObject(
                int(ErrorCode.MISSING_REQUIRED_CLIENT_CAPABILITY),
                f"{method} needs the {extension} extension declared in this "
                "request's clientCapabilities",
                {"requiredCapabilities": {"extensions": {extension: {}}}},
            )
        return None

    def declared(self, entry: RequestEntry) -> RequestMeta | None:
        """What inbound request *entry* declared in its ``_meta`` (None: a
        handshake-era request). Made once, on the first read: the same record
        every time after."""
        if entry.envelope is None:
            return None
        meta = entry.request_meta
        if meta is None:
            meta = entry.request_meta = RequestMeta(*entry.envelope)
        return meta

    # ------------------------------------------------------------- 4. the result

    def discover_result(self) -> JSONObject:
        """Server: the ``server/discover`` result (DS-01..DS-03); :meth:`result`
        adds ``resultType``, ``serverInfo`` and the cache hints."""
        capabilities = self.discover_capabilities
        result: JSONObject = {
            "supportedVersions": list(self._side.supported_versions),
            "capabilities": self._side.capabilities if capabilities is None else capabilities,
        }
        if self._side.instructions is not None:
            result["instructions"] = self._side.instructions
        return result

    def result(self, entry: RequestEntry, raw: JSONObject) -> JSONObject | ErrorObject:
        """Server: the result of inbound request *entry* as the wire wants it:
        ``resultType`` (default ``"complete"``), ``serverInfo`` in ``_meta``
        (ME-11, unless turned off), the cache hints of a complete cacheable
        result that sets none (CA-01), no hints on an input-required one. An
        input-required result for a method that may not answer so (PT-04),
        or with neither ``inputRequests`` nor ``requestState`` (PT-06), is the
        handler's bug: -32603.

        Spec: ME-11, CA-01, PT-04, PT-06, A-21.
        """
        # Copied (the handler may hold what it returned); keys tested with
        # ``in`` and dicts built by unpacking rather than setdefault calls, on
        # every result.
        raw = {**raw}
        if "resultType" in raw:
            result_type = raw["resultType"]
        else:
            result_type = raw["resultType"] = "complete"
        spec = lookup(entry.method, self._side.custom) or _UNKNOWN
        if result_type == "input_required":
            if not spec.input_required or not (
                raw.get("inputRequests") or raw.get("requestState") is not None
            ):
                return ErrorObject(
                    int(ErrorCode.INTERNAL_ERROR),
                    f"Internal error: {entry.method} cannot answer with this input-required result",
                )
            raw.pop("ttlMs", None)
            raw.pop("cacheScope", None)
            entry.input_required = True
        elif spec.cacheable:
            hints = self._cache_hints
            ttl, scope = hints.get(entry.method, _NO_HINT) if hints else _NO_HINT
            raw.setdefault("ttlMs", ttl)
            raw.setdefault("cacheScope", scope)
        if self._result_server_info:
            own = raw.get("_meta")
            if own:
                meta = {**own}
                if _SERVER_INFO_KEY not in meta:
                    meta[_SERVER_INFO_KEY] = self._side.info
            else:
                meta = {_SERVER_INFO_KEY: self._side.info}
            raw["_meta"] = meta
        return raw

    def result_type(self, entry: RequestEntry, result: JSONObject) -> Any:
        """Client: the type of outbound request *entry*'s result, read from its
        ``resultType`` (A-21): absent means complete; ``input_required`` only
        where PT-04 allows it; a task only to a request that declared the
        tasks extension (SEP-2663); anything else is not ours to guess, and
        fails the call."""
        spec = lookup(entry.method, self._side.custom) or _UNKNOWN
        kind = result.get("resultType", "complete")
        if kind == "input_required" and spec.input_required:
            entry.input_required = True
            return mcp_types.InputRequiredResult
        if kind == mcp_types.RESULT_TYPE_TASK and entry.task_allowed:
            return mcp_types.DetailedTask
        if kind != "complete":
            return ErrorObject(
                int(ErrorCode.INVALID_PARAMS),
                f"Invalid result for {entry.method} from the peer",
                {"errors": [f"resultType {str(kind)[:64]!r} is not allowed here"]},
            )
        if spec.modern_result_type is not None:
            return spec.modern_result_type
        return spec.result_type
