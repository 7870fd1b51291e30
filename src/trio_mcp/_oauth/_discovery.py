"""Discovery: from the MCP server's 401 to the authorization server's metadata.

Protected resource metadata (RFC 9728) is fetched from the challenge's
``resource_metadata`` when it has one, else from the path-based well-known
URI, then the root one (AU-04); its ``resource`` must be the MCP server (the
same origin, a prefix of its path), else the client refuses to authorize
(the token would be for another resource). The authorization server's
metadata is fetched from the RFC 8414 and OIDC discovery URLs in the order
AU-06 gives (three for an issuer with a path, two without), and its
``issuer`` must be the issuer the URL was built from (RFC 8414 §3.3).

A server without protected resource metadata is a 2025-03-26 server (AU-02):
it is its own authorization server, with RFC 8414 metadata at its origin (the
path discarded), else the default endpoints ``/authorize``, ``/token`` and
``/register``. Its issuer is the metadata's, which must be on the server's
origin.

Every fetch is bounded (a size cap, the provider's client timeout); a body
that is not a JSON object, or lacks what is required, is refused with
:class:`~trio_mcp.auth.AuthorizationFailed` naming the URL.

Spec: AU-02, AU-04, AU-06.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import orjson

from .._errors import AuthorizationFailed
from ._types import AuthServerMetadata, ProtectedResourceMetadata

logger = logging.getLogger("trio_mcp.oauth")

#: Largest metadata document read.
MAX_METADATA = 256 * 1024


def canonical_resource(url: str) -> str:
    """The canonical URI of the MCP server at *url* (RFC 8707 §2, the MCP spec's
    "Canonical Server URI"): lower-case scheme and host, no default port, no
    fragment, no query, no trailing slash on a path."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    port = parts.port
    if port is not None and (scheme, port) not in (("http", 80), ("https", 443)):
        host = f"{host}:{port}"
    path = parts.path
    if path.endswith("/"):
        path = path.rstrip("/")
    return urlunsplit((scheme, host, path, "", ""))


def origin_of(url: str) -> str:
    parts = urlsplit(canonical_resource(url))
    return f"{parts.scheme}://{parts.netloc}"


def resource_allowed(server_url: str, resource: str) -> bool:
    """True if the PRM *resource* names the MCP server at *server_url*: same
    origin and a path prefix of the server's (at segment boundaries)."""
    server = urlsplit(canonical_resource(server_url))
    claimed = urlsplit(canonical_resource(resource))
    if (server.scheme, server.netloc) != (claimed.scheme, claimed.netloc):
        return False
    if not claimed.path:
        return True
    return server.path == claimed.path or server.path.startswith(claimed.path + "/")


def prm_urls(server_url: str, challenged: str | None) -> list[str]:
    """Where to look for protected resource metadata, in AU-04's order."""
    parts = urlsplit(server_url)
    root = f"{parts.scheme}://{parts.netloc}/.well-known/oauth-protected-resource"
    urls = [challenged] if challenged else []
    path = parts.path.rstrip("/")
    if path:
        urls.append(root + path)
    urls.append(root)
    return list(dict.fromkeys(urls))


def as_metadata_urls(issuer: str) -> list[str]:
    """The RFC 8414 and OIDC discovery URLs of *issuer*, in AU-06's order."""
    parts = urlsplit(issuer)
    base = f"{parts.scheme}://{parts.netloc}"
    path = parts.path.rstrip("/")
    if path:
        return [
            f"{base}/.well-known/oauth-authorization-server{path}",
            f"{base}/.well-known/openid-configuration{path}",
            f"{base}{path}/.well-known/openid-configuration",
        ]
    return [
        f"{base}/.well-known/oauth-authorization-server",
        f"{base}/.well-known/openid-configuration",
    ]


async def _get_json(http: httpx.AsyncClient, url: str) -> Mapping[str, Any] | None:
    """GET *url*: the JSON object, None for a 4xx (try the next URL), else refused."""
    _check_url(url)
    try:
        async with http.stream(
            "GET", url, headers={"Accept": "application/json", "MCP-Protocol-Version": "2025-11-25"}
        ) as response:
            if 400 <= response.status_code < 500:
                logger.debug("no metadata at %s: HTTP %s", url, response.status_code)
                return None
            if response.status_code != 200:
                raise AuthorizationFailed(f"{url} answered HTTP {response.status_code}")
            body = b""
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > MAX_METADATA:
                    raise AuthorizationFailed(f"{url}: metadata larger than {MAX_METADATA} bytes")
    except httpx.HTTPError as exc:
        raise AuthorizationFailed(f"fetching {url} failed: {exc!r}") from exc
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        raise AuthorizationFailed(f"{url}: metadata is not JSON") from None
    if not isinstance(data, dict):
        raise AuthorizationFailed(f"{url}: metadata is not a JSON object")
    return data


def _check_url(url: str) -> None:
    """Only http(s) URLs are fetched (SEC-06, SEC-10)."""
    scheme = urlsplit(url).scheme.lower()
    if scheme not in ("http", "https"):
        raise AuthorizationFailed(f"refused to fetch a {scheme or 'relative'} URL: {url!r}")


def _strings(value: object) -> tuple[str, ...] | None:
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return tuple(value)
    return None


async def fetch_protected_resource(
    http: httpx.AsyncClient, server_url: str, challenged: str | None
) -> ProtectedResourceMetadata | None:
    """The server's protected resource metadata (AU-04), or None when it has none.

    Raises :class:`AuthorizationFailed` when the metadata names another
    resource or no authorization server.
    """
    for url in prm_urls(server_url, challenged):
        data = await _get_json(http, url)
        if data is None:
            continue
        resource = data.get("resource")
        if resource is not None and not isinstance(resource, str):
            raise AuthorizationFailed(f"{url}: 'resource' is not a string")
        if resource is not None and not resource_allowed(server_url, resource):
            raise AuthorizationFailed(
                f"the protected resource metadata at {url} is for {resource!r}, "
                f"not for {canonical_resource(server_url)!r}: refusing to authorize"
            )
        servers = _strings(data.get("authorization_servers"))
        if not servers:
            raise AuthorizationFailed(f"{url}: no authorization_servers")
        logger.debug("protected resource metadata from %s", url)
        return ProtectedResourceMetadata(
            resource=resource,
            authorization_servers=servers,
            scopes_supported=_strings(data.get("scopes_supported")),
            url=url,
            raw=data,
        )
    return None


def _metadata(data: Mapping[str, Any], issuer: str, url: str) -> AuthServerMetadata:
    token = data.get("token_endpoint")
    if not isinstance(token, str):
        raise AuthorizationFailed(f"{url}: no token_endpoint")
    authorize = data.get("authorization_endpoint")
    register = data.get("registration_endpoint")
    for _name, value in (("token_endpoint", token), ("authorization_endpoint", authorize)):
        if isinstance(value, str):
            _check_url(value)
    return AuthServerMetadata(
        issuer=issuer,
        authorization_endpoint=authorize if isinstance(authorize, str) else None,
        token_endpoint=token,
        registration_endpoint=register if isinstance(register, str) else None,
        scopes_supported=_strings(data.get("scopes_supported")),
        code_challenge_methods_supported=_strings(data.get("code_challenge_methods_supported")),
        token_endpoint_auth_methods_supported=_strings(
            data.get("token_endpoint_auth_methods_supported")
        ),
        grant_types_supported=_strings(data.get("grant_types_supported")),
        iss_parameter_supported=data.get("authorization_response_iss_parameter_supported") is True,
        client_id_metadata_document_supported=(
            data.get("client_id_metadata_document_supported") is True
        ),
        raw=data,
    )


async def fetch_auth_server(http: httpx.AsyncClient, issuer: str) -> AuthServerMetadata:
    """The metadata of the authorization server *issuer* (AU-06, RFC 8414 §3.3).

    Raises :class:`AuthorizationFailed` when no discovery URL answers, or the
    metadata's ``issuer`` is not *issuer* (exact string comparison): such
    metadata is never used, its endpoints never contacted.
    """
    for url in as_metadata_urls(issuer):
        data = await _get_json(http, url)
        if data is None:
            continue
        claimed = data.get("issuer")
        if claimed != issuer:
            raise AuthorizationFailed(
                f"the authorization server metadata at {url} names the issuer {claimed!r}, "
                f"not {issuer!r}: refusing to use it (RFC 8414 §3.3)"
            )
        return _metadata(data, issuer, url)
    raise AuthorizationFailed(
        f"no authorization server metadata for {issuer} at {as_metadata_urls(issuer)}"
    )


async def fetch_legacy_auth_server(http: httpx.AsyncClient, server_url: str) -> AuthServerMetadata:
    """A 2025-03-26 server's authorization server (AU-02): metadata at its
    origin, else the default endpoints there."""
    base = origin_of(server_url)
    url = f"{base}/.well-known/oauth-authorization-server"
    data = await _get_json(http, url)
    if data is None:
        logger.debug("no metadata at %s: the 2025-03-26 default endpoints", url)
        return AuthServerMetadata(
            issuer=base,
            authorization_endpoint=f"{base}/authorize",
            token_endpoint=f"{base}/token",
            registration_endpoint=f"{base}/register",
            fallback=True,
        )
    claimed = data.get("issuer")
    # The server is its own authorization server: its metadata's issuer is
    # recorded as given, but it must be on the server's own origin.
    if not isinstance(claimed, str) or origin_of(claimed) != base:
        raise AuthorizationFailed(
            f"the authorization server metadata at {url} names the issuer {claimed!r}, "
            f"which is not on {base}: refusing to use it"
        )
    return _metadata(data, claimed, url)


def pick_authorization_server(prm: ProtectedResourceMetadata, preferred: Sequence[str]) -> str:
    """The authorization server to use: the first *preferred* one the metadata
    lists (one the client already has credentials for), else its first."""
    for issuer in preferred:
        if issuer in prm.authorization_servers:
            return issuer
    return prm.authorization_servers[0]
