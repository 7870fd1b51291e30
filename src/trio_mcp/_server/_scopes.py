"""Required OAuth scopes of tools, resources, resource templates and prompts
(per-item scopes; AU-12 step-up; ST-06 lists that vary with
authorization).

A registration may name the scopes a caller's access token must grant to use
the item (``@server.tool(scopes=["files:write"])``). Who checks them, where:

* **Streamable HTTP with** ``auth=ResourceServer(...)``: the endpoint, after
  the bearer token and the body are read and *before* anything is delivered to
  a session. It asks :meth:`trio_mcp.Server.required_scopes` about each request of the
  body (its ``method`` and the ``name``/``uri``/``ref`` of its params: the body
  is the source of truth in both eras; in 2026-07-28 the ``Mcp-Method`` and
  ``Mcp-Name`` headers are checked against it separately) and refuses a token
  that lacks one with HTTP 403 ``insufficient_scope`` and the scopes to ask for
  in ``WWW-Authenticate`` (step-up, AU-12). A handler-level refusal could not
  do that: in the handshake era the answer may already be an SSE stream whose
  status (200) is sent.
* **Any other transport whose peer is authenticated** (its owner opens the
  session with an ``Identity`` naming the caller's access token, which
  ``ctx.auth`` reads): the server refuses the request
  with JSON-RPC error :data:`INSUFFICIENT_SCOPE` (-32003, implementation
  defined, ``spec_notes/errors.md``) whose ``data`` names ``requiredScopes``.
  The same check runs on HTTP too, as a second line behind the endpoint's.
* **No authentication** (stdio, an HTTP endpoint without ``auth``): nothing is
  checked; there is no token to hold scopes (AU-01: stdio servers take their
  credentials from the environment).

Lists show everything by default (the client learns what exists and steps up
when it calls); ``Server(filter_lists_by_scope=True)`` leaves out of
``tools/list``, ``resources/list``, ``resources/templates/list`` and
``prompts/list`` what an authenticated caller cannot use (ST-06 allows lists
to vary with authorization; cursors stay valid for the same principal).

Nothing here does I/O or checkpoints.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

#: The JSON-RPC error of a request whose authenticated caller lacks a scope,
#: on transports without HTTP (the HTTP endpoint answers 403 instead).
INSUFFICIENT_SCOPE = -32003

# RFC 6749 §3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E )
_SCOPE_TOKEN = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+")


def check_scopes(owner: str, scopes: Iterable[str] | None) -> frozenset[str]:
    """The scopes a registration names, checked.

    Raises:
        TypeError: *scopes* is a single string (``"a b"`` is a common slip
            for ``["a", "b"]``) or holds a non-string.
        ValueError: a scope is not an RFC 6749 scope-token.
    """
    if scopes is None:
        return frozenset()
    if isinstance(scopes, str):
        raise TypeError(f"{owner}: scopes must be a list of scope names, not a string")
    checked: set[str] = set()
    for scope in scopes:
        if not isinstance(scope, str):
            raise TypeError(f"{owner}: scope {scope!r} is not a string")
        if not _SCOPE_TOKEN.fullmatch(scope):
            raise ValueError(f"{owner}: {scope!r} is not an OAuth scope (RFC 6749 §3.3)")
        checked.add(scope)
    return frozenset(checked)


class _HasScopes(Protocol):
    @property
    def scopes(self) -> frozenset[str]: ...


def field(params: Any, key: str) -> Any:
    """*key* of a request's params, whether raw JSON (a dict, as the HTTP
    endpoint has it) or typed (as handlers have it); None if absent."""
    if params is None:
        return None
    if isinstance(params, Mapping):
        return params.get(key)
    return getattr(params, key, None)


def targets(method: str, params: Any) -> list[tuple[str, str]]:
    """What a request uses, as ``(kind, name or URI)`` pairs: ``("tool",
    name)``, ``("prompt", name)``, ``("resource", uri)``, ``("template",
    uri_template)``; empty for a request that uses no registered item (or
    whose params are malformed: the session refuses those itself). A
    2026-07-28 ``subscriptions/listen`` uses every resource it subscribes to,
    as ``resources/subscribe`` uses its one."""
    if method in ("tools/call", "prompts/get"):
        name = field(params, "name")
        kind = "tool" if method == "tools/call" else "prompt"
        return [(kind, name)] if isinstance(name, str) else []
    if method in ("resources/read", "resources/subscribe"):
        uri = field(params, "uri")
        return [("resource", uri)] if isinstance(uri, str) else []
    if method == "completion/complete":
        ref = field(params, "ref")
        ref_type = field(ref, "type")
        if ref_type == "ref/prompt":
            name = field(ref, "name")
            return [("prompt", name)] if isinstance(name, str) else []
        if ref_type == "ref/resource":
            # A template's completion: its URI is the template itself.
            uri = field(ref, "uri")
            return [("template", uri)] if isinstance(uri, str) else []
        return []
    if method == "subscriptions/listen":
        wanted = field(params, "notifications")
        uris = field(
            wanted,
            "resourceSubscriptions" if isinstance(wanted, Mapping) else "resource_subscriptions",
        )
        if not isinstance(uris, list):
            return []
        return [("resource", uri) for uri in uris if isinstance(uri, str)]
    return []


def visible(item: _HasScopes, granted: frozenset[str] | None) -> bool:
    """Whether a list shows *item* to a caller granted *granted* (None: not
    authenticated, so nothing is filtered)."""
    return granted is None or item.scopes <= granted
