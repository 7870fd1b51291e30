"""trio_mcp.auth: the Streamable HTTP endpoint as an OAuth 2.1 protected resource.

Give ``trio_mcp.http_app`` (or ``serve_http``) ``auth=ResourceServer(verifier,
resource=..., authorization_servers=[...])``: every request to the MCP endpoint
then needs a valid bearer token (401, 403 ``insufficient_scope`` or 503
otherwise), the RFC 9728 metadata is served at its well-known paths, and a
handler sees the verified :class:`AccessToken` as ``ctx.auth`` (never the raw
token). A :class:`TokenVerifier` turns a token into an ``AccessToken``;
:class:`StaticTokenVerifier` is a fixed table of tokens for development.

Spec: issue #15 (AU-01..AU-12).
"""

from ._auth._resource import Refusal, ResourceServer
from ._auth._static import StaticTokenVerifier
from ._auth._token import AccessToken, InvalidToken, TokenVerifier, VerifierUnavailable

__all__ = [
    "AccessToken",
    "InvalidToken",
    "Refusal",
    "ResourceServer",
    "StaticTokenVerifier",
    "TokenVerifier",
    "VerifierUnavailable",
]
