"""Client registration in AU-07's order of priority.

1. Pre-registered credentials the user gave for this authorization server
   (or for any, when given without an issuer).
2. Credentials registered earlier with this server (storage, keyed by its
   issuer: never another server's, SEP-2352).
3. A client ID metadata document: the user's HTTPS URL is the ``client_id``,
   used only when the server advertises
   ``client_id_metadata_document_supported``.
4. Dynamic client registration (RFC 7591) at the server's
   ``registration_endpoint``, with ``application_type`` (SEP-837),
   ``grant_types`` (with ``refresh_token`` when the server lists
   ``offline_access``, SEP-2207) and a ``token_endpoint_auth_method`` the
   server supports.

Anything else is :class:`~trio_mcp.auth.AuthorizationFailed`: the user must
register the client and pass its credentials.

Spec: AU-07.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from .._errors import AuthorizationFailed
from ._storage import TokenStorage
from ._types import AuthServerMetadata, ClientInfo

logger = logging.getLogger("trio_mcp.oauth")


def choose_auth_method(metadata: AuthServerMetadata) -> str:
    """The token endpoint authentication method to register: ``none`` (a
    public client) when the server allows it, else ``client_secret_basic``,
    else ``client_secret_post`` (RFC 8414's default, basic, when it lists none)."""
    supported = metadata.token_endpoint_auth_methods_supported
    if supported is None:
        return "client_secret_basic"
    for method in ("none", "client_secret_basic", "client_secret_post"):
        if method in supported:
            return method
    return "client_secret_basic"


def registration_body(
    metadata: AuthServerMetadata,
    grant_metadata: Mapping[str, Any],
    *,
    client_name: str,
    application_type: str,
    scope: str | None,
) -> dict[str, Any]:
    """The RFC 7591 request: the grant's fields, the client's name and type,
    and an authentication method the server supports."""
    body: dict[str, Any] = {
        "client_name": client_name,
        "application_type": application_type,
        "token_endpoint_auth_method": choose_auth_method(metadata),
        **grant_metadata,
    }
    grant_types = list(body.get("grant_types") or [])
    if (
        "authorization_code" in grant_types
        and "refresh_token" not in grant_types
        and "offline_access" in (metadata.scopes_supported or ())
    ):
        grant_types.append("refresh_token")
    if grant_types:
        body["grant_types"] = grant_types
    if scope:
        body["scope"] = scope
    return body


async def register(
    http: httpx.AsyncClient,
    metadata: AuthServerMetadata,
    grant_metadata: Mapping[str, Any],
    *,
    client_name: str,
    application_type: str,
    scope: str | None,
) -> ClientInfo:
    """Dynamic client registration (RFC 7591) with the server of *metadata*."""
    endpoint = metadata.registration_endpoint
    if endpoint is None:
        raise AuthorizationFailed(
            f"{metadata.issuer} supports neither client ID metadata documents nor dynamic "
            "registration, and no client credentials were given for it"
        )
    body = registration_body(
        metadata,
        grant_metadata,
        client_name=client_name,
        application_type=application_type,
        scope=scope,
    )
    try:
        response = await http.post(endpoint, json=body, headers={"Accept": "application/json"})
    except httpx.HTTPError as exc:
        raise AuthorizationFailed(f"client registration at {endpoint} failed: {exc!r}") from exc
    if response.status_code not in (200, 201):
        raise AuthorizationFailed(
            f"client registration at {endpoint} answered HTTP {response.status_code}"
        )
    try:
        data = response.json()
    except ValueError:
        data = None
    if not isinstance(data, dict) or not isinstance(data.get("client_id"), str):
        raise AuthorizationFailed(f"client registration at {endpoint} answered without a client_id")
    secret = data.get("client_secret")
    method = data.get("token_endpoint_auth_method")
    if not isinstance(method, str):
        # The server kept what was asked for (RFC 7591 §3.2.1 echoes it when it does).
        method = body["token_endpoint_auth_method"]
    logger.debug("registered with %s", metadata.issuer)
    return ClientInfo(
        client_id=data["client_id"],
        client_secret=secret if isinstance(secret, str) and secret else None,
        token_endpoint_auth_method=method,
        issuer=metadata.issuer,
    )


async def resolve_client(
    http: httpx.AsyncClient,
    metadata: AuthServerMetadata,
    grant_metadata: Mapping[str, Any],
    storage: TokenStorage,
    *,
    pre_registered: Sequence[ClientInfo],
    client_metadata_url: str | None,
    client_name: str,
    application_type: str,
    scope: str | None,
) -> ClientInfo:
    """The client's credentials at the server of *metadata*, in AU-07's order."""
    issuer = metadata.issuer
    for client in pre_registered:
        if client.issuer == issuer:
            return client
    for client in pre_registered:
        if client.issuer is None:
            return client
    stored = await storage.get_client(issuer)
    if stored is not None and stored.issuer == issuer:
        return stored
    if client_metadata_url is not None and metadata.client_id_metadata_document_supported:
        return ClientInfo(
            client_id=client_metadata_url, token_endpoint_auth_method="none", issuer=issuer
        )
    client = await register(
        http,
        metadata,
        grant_metadata,
        client_name=client_name,
        application_type=application_type,
        scope=scope,
    )
    await storage.set_client(issuer, client)
    return client
