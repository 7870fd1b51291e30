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

The client side: hand ``open_http_client(url, auth=OAuthProvider(url,
redirect=...))`` an :class:`OAuthProvider` and every request carries a bearer
token, obtained on the server's first 401 (discovery, registration, the
authorization code grant with PKCE, refresh, step-up). The redirect step is a
:class:`RedirectHandler`: :class:`LoopbackRedirect` for a person with a
browser, :class:`HeadlessRedirect` for an authorization server that approves
without one. Tokens and registrations go to a :class:`TokenStorage`
(:class:`MemoryTokenStorage` by default, :class:`FileTokenStorage`); other
grants plug in as a :class:`Grant` (given a :class:`GrantContext`). Authlib
(the ``auth`` extra) is imported when a flow runs.

The extension grants, for ``OAuthProvider(url, grant=...)``:
:class:`ClientCredentialsGrant` (a client secret, or a :class:`PrivateKeyJWT`
assertion), :class:`EnterpriseManagedGrant` (an enterprise IdP's ID token
exchanged for an ID-JAG, then the JWT bearer grant) and
:class:`JwtBearerGrant` (a workload's JWT). DPoP (RFC 9449):
``OAuthProvider(url, ..., dpop=DPoP())`` gets DPoP-bound tokens, sends a
proof with each request and meets either server's nonce demand.
:class:`DPoPKey`, :class:`DPoP` and :class:`PrivateKeyJWT` need joserfc (the
``auth`` extra) and are imported on first use.

Spec: AU-01..AU-15, AUX-01..AUX-05.
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
from ._errors import AuthorizationFailed
from ._oauth._challenge import Challenge, ChallengeError, parse_www_authenticate
from ._oauth._code import AuthorizationCodeGrant
from ._oauth._egress import EgressPolicy
from ._oauth._grants import (
    ClientCredentialsGrant,
    EnterpriseManagedGrant,
    JwtBearerGrant,
    TokenExchangeFailed,
    UnusableToken,
)
from ._oauth._provider import OAuthProvider
from ._oauth._redirect import HeadlessRedirect, LoopbackRedirect
from ._oauth._storage import FileTokenStorage, MemoryTokenStorage, TokenStorage
from ._oauth._types import (
    AuthServerMetadata,
    ClientInfo,
    DPoPSigner,
    Grant,
    GrantContext,
    ProtectedResourceMetadata,
    RedirectHandler,
    TokenResponse,
)

if TYPE_CHECKING:
    from ._auth._jwt import JWTVerifier
    from ._oauth._assertions import PrivateKeyJWT
    from ._oauth._dpop import DPoP, DPoPKey

__all__ = [
    "AccessToken",
    "AuthServerMetadata",
    "AuthorizationCodeGrant",
    "AuthorizationFailed",
    "Challenge",
    "ChallengeError",
    "ClientCredentialsGrant",
    "ClientInfo",
    "DPoP",
    "DPoPKey",
    "DPoPSigner",
    "EgressPolicy",
    "EnterpriseManagedGrant",
    "FileTokenStorage",
    "Grant",
    "GrantContext",
    "HeadlessRedirect",
    "InsufficientScope",
    "IntrospectionVerifier",
    "InvalidToken",
    "JWTVerifier",
    "JwtBearerGrant",
    "LoopbackRedirect",
    "MemoryTokenStorage",
    "OAuthProvider",
    "PrivateKeyJWT",
    "ProtectedResourceMetadata",
    "RedirectHandler",
    "Refusal",
    "ResourceServer",
    "StaticTokenVerifier",
    "TokenExchangeFailed",
    "TokenResponse",
    "TokenStorage",
    "TokenVerifier",
    "UnusableToken",
    "VerifierUnavailable",
    "parse_www_authenticate",
]


#: Names that need joserfc (the auth extra), by module: imported when asked for.
_LAZY = {
    "JWTVerifier": "._auth._jwt",
    "DPoP": "._oauth._dpop",
    "DPoPKey": "._oauth._dpop",
    "PrivateKeyJWT": "._oauth._assertions",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'trio_mcp.auth' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module, __name__.rpartition(".")[0]), name)
    globals()[name] = value
    return value
