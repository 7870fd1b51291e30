"""The Streamable HTTP server as an OAuth 2.1 resource server.

:class:`ResourceServer` is what ``StreamableHTTPApp(auth=...)`` asks about each
request to the MCP endpoint (and the legacy HTTP+SSE endpoints): it reads the
bearer token of the ``Authorization`` header (RFC 6750 §2.1; never from the
query string, AU-09), has its :class:`~trio_mcp._auth._token.TokenVerifier`
verify it, checks the required scopes, and answers either the
:class:`~trio_mcp._auth._token.AccessToken` or a :class:`Refusal`: 401 with a
``WWW-Authenticate: Bearer`` challenge naming the protected resource metadata
(AU-01, AU-02), 403 ``insufficient_scope`` (AU-12), 400 ``invalid_request`` for
a request with several ``Authorization`` headers, 503 when the verifier cannot
decide. It also makes the RFC 9728 protected resource metadata document and
says where it is served (RFC 9728 §3.1: both the root well-known URI and the
path-specific one).

The raw token is never logged, stored or passed on (AU-11): only the verified
``AccessToken`` reaches the session (``ctx.auth``).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

import attrs

from ._token import (
    AccessToken,
    InsufficientScope,
    InvalidToken,
    TokenVerifier,
    VerifierUnavailable,
)

logger = logging.getLogger("trio_mcp.auth")

#: The RFC 9728 well-known URI suffix.
WELL_KNOWN = "/.well-known/oauth-protected-resource"

# RFC 6750 §2.1: b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="
_B64TOKEN = re.compile(r"[A-Za-z0-9\-._~+/]+=*")


@attrs.frozen
class Refusal:
    """How to refuse a request: its HTTP *status*, the ``WWW-Authenticate``
    challenge (None: no challenge, e.g. 503) and a *message* for the body (never
    the token)."""

    status: int
    www_authenticate: str | None
    message: str


def _quote(value: str) -> str:
    """An RFC 7235 quoted-string."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


class ResourceServer:
    """This MCP server as an OAuth 2.1 protected resource.

    Args:
        verifier: verifies bearer tokens (it checks signature or activity, expiry,
            issuer and that the token was issued for *resource*).
        resource: this server's canonical URI (e.g. ``https://host/mcp``),
            the ``resource`` of the metadata; its path decides the
            path-specific well-known URI.
        authorization_servers: the issuers whose tokens are accepted.
        scopes_supported: the scopes the metadata lists.
        required_scopes: the scopes every request needs (403 otherwise).
        resource_name: a human-readable name for the metadata.

    Bearer tokens as RFC 6750 has them; the metadata of RFC 9728.

    Spec: AU-01..AU-03, AU-09..AU-12.
    """

    def __init__(
        self,
        verifier: TokenVerifier,
        *,
        resource: str,
        authorization_servers: Sequence[str],
        scopes_supported: Sequence[str] = (),
        required_scopes: Sequence[str] = (),
        resource_name: str | None = None,
    ) -> None:
        parts = urlsplit(resource)
        if parts.scheme not in ("https", "http") or not parts.netloc or parts.fragment:
            raise ValueError(
                f"resource must be an absolute http(s) URI without fragment, not {resource!r}"
            )
        if not authorization_servers:
            raise ValueError("a protected resource names at least one authorization server")
        self.verifier = verifier
        self.resource = resource
        self.authorization_servers = tuple(authorization_servers)
        self.scopes_supported = tuple(scopes_supported)
        self.required_scopes = tuple(required_scopes)
        self.resource_name = resource_name
        path = parts.path.rstrip("/")
        self._origin = f"{parts.scheme}://{parts.netloc}"
        self._specific = WELL_KNOWN + path
        #: The absolute URL of the metadata, as challenges name it.
        self.metadata_url = self._origin + self._specific

    def metadata(self) -> dict[str, Any]:
        """The RFC 9728 protected resource metadata document."""
        document: dict[str, Any] = {
            "resource": self.resource,
            "authorization_servers": list(self.authorization_servers),
            "bearer_methods_supported": ["header"],
        }
        if self.scopes_supported:
            document["scopes_supported"] = list(self.scopes_supported)
        if self.resource_name is not None:
            document["resource_name"] = self.resource_name
        return document

    def well_known_paths(self) -> tuple[str, ...]:
        """The paths the metadata is served at: the root well-known URI and,
        for a resource with a path, the path-specific one (RFC 9728 §3.1)."""
        if self._specific == WELL_KNOWN:
            return (WELL_KNOWN,)
        return (WELL_KNOWN, self._specific)

    def _challenge(self, *, error: str | None = None, scopes: Iterable[str] = ()) -> str:
        params: list[str] = []
        if error is not None:
            params.append(f"error={_quote(error)}")
        scope = " ".join(scopes)
        if scope:
            params.append(f"scope={_quote(scope)}")
        params.append(f"resource_metadata={_quote(self.metadata_url)}")
        return "Bearer " + ", ".join(params)

    async def authenticate(self, scope: Mapping[str, Any]) -> AccessToken | Refusal:
        """The verified token of the ASGI request *scope*, or how to refuse it.

        Only the ``Authorization`` header counts: a token in the query string
        (``access_token=``) is never looked at, so such a request is refused as one
        without a token.

        Cancellation: cancellable (the verifier's check is abandoned).

        Spec: AU-09.
        """
        values = [v for k, v in scope.get("headers", ()) if k == b"authorization"]
        if len(values) > 1:
            return Refusal(
                400,
                self._challenge(error="invalid_request"),
                "Bad Request: more than one Authorization header",
            )
        token: str | None = None
        if values:
            scheme, _, rest = values[0].decode("latin-1").strip().partition(" ")
            if scheme.lower() == "bearer":
                token = rest.strip()
        if token is None:
            return Refusal(
                401,
                self._challenge(scopes=self.required_scopes),
                "Unauthorized: a bearer token is required",
            )
        invalid = Refusal(
            401,
            self._challenge(error="invalid_token", scopes=self.required_scopes),
            "Unauthorized: invalid token",
        )
        if not _B64TOKEN.fullmatch(token):
            logger.info("refused a malformed bearer token")
            return invalid
        try:
            verified = await self.verifier.verify(token)
        except InsufficientScope as exc:
            # Valid, but the verifier's own required scopes are missing: step-up (AU-12).
            logger.info("refused a bearer token lacking scopes: %s", exc.reason)
            return Refusal(
                403,
                self._challenge(
                    error="insufficient_scope", scopes=tuple(exc.scopes) or self.required_scopes
                ),
                "Forbidden: the token lacks a required scope",
            )
        except InvalidToken as exc:
            logger.info("refused a bearer token: %s", exc.reason)
            return invalid
        except VerifierUnavailable as exc:
            logger.warning("cannot verify a bearer token now: %s", exc)
            return Refusal(503, None, "Service Unavailable: the token cannot be verified now")
        if verified.expires_at is not None and verified.expires_at <= time.time():
            # The verifier should have said so; a stale answer must not pass.
            logger.info("refused an expired bearer token")
            return invalid
        missing = [s for s in self.required_scopes if s not in verified.scopes]
        if missing:
            return Refusal(
                403,
                self._challenge(error="insufficient_scope", scopes=self.required_scopes),
                "Forbidden: the token lacks a required scope",
            )
        return verified

    def step_up(self, token: AccessToken, needed: Iterable[str]) -> Refusal | None:
        """How to refuse a request that needs *needed* (the scopes of the tool,
        resource or prompt it uses) when *token* lacks some of them; None if it
        has them all.

        The challenge's ``scope`` is what to ask the authorization server for:
        the resource's required scopes, the scopes the token already grants and
        the needed ones (the spec's recommended step-up answer, so the client
        does not lose what it was granted), without repeats.

        Synchronous; no checkpoint.

        Spec: AU-12.
        """
        wanted = tuple(dict.fromkeys(needed))
        missing = [scope for scope in wanted if scope not in token.scopes]
        if not missing:
            return None
        logger.info("refused a request needing scopes the token lacks: %s", " ".join(missing))
        scopes = dict.fromkeys((*self.required_scopes, *sorted(token.scopes), *wanted))
        return Refusal(
            403,
            self._challenge(error="insufficient_scope", scopes=scopes),
            "Forbidden: the token lacks a scope this request needs",
        )
