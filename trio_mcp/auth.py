"""trio_mcp.auth: the Streamable HTTP endpoint as an OAuth 2.1 protected resource.

Give ``trio_mcp.http_app`` (or ``serve_http``) ``auth=ResourceServer(verifier,
resource=..., authorization_servers=[...])``: every request to the MCP endpoint
then needs a valid bearer token (401, 403 ``insufficient_scope`` or 503
otherwise), the RFC 9728 metadata is served at its well-known paths, and a
handler sees the verified :class:`AccessToken` as ``ctx.auth`` (never the raw
token). A :class:`TokenVerifier` turns a token into an ``AccessToken``:
:class:`JWTVerifier` checks JWT access tokens against the authorization
server's JWKS (the ``auth`` extra: joserfc; imported on first use),
:class:`IntrospectionVerifier` asks its RFC 7662 endpoint, and
:class:`StaticTokenVerifier` is a fixed table of tokens for development.

Spec: issue #15 (AU-01..AU-12).
"""

from typing import TYPE_CHECKING, Any

from ._auth._introspection import IntrospectionVerifier
from ._auth._resource import Refusal, ResourceServer
from ._auth._static import StaticTokenVerifier
from ._auth._token import (
    AccessToken,
    InsufficientScope,
    InvalidToken,
    TokenVerifier,
    VerifierUnavailable,
)

if TYPE_CHECKING:
    from ._auth._jwt import JWTVerifier

__all__ = [
    "AccessToken",
    "InsufficientScope",
    "IntrospectionVerifier",
    "InvalidToken",
    "JWTVerifier",
    "Refusal",
    "ResourceServer",
    "StaticTokenVerifier",
    "TokenVerifier",
    "VerifierUnavailable",
]


def __getattr__(name: str) -> Any:
    # The JWT verifier needs joserfc (the auth extra): imported when asked for.
    if name == "JWTVerifier":
        from ._auth._jwt import JWTVerifier

        globals()[name] = JWTVerifier
        return JWTVerifier
    raise AttributeError(f"module 'trio_mcp.auth' has no attribute {name!r}")
