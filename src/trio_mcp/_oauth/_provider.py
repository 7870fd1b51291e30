"""``OAuthProvider``: an ``httpx.Auth`` that authorizes the MCP client's requests.

Give it to :func:`trio_mcp.open_http_client` (``auth=``): every request the
transport makes (POST, GET, DELETE) carries ``Authorization: Bearer <token>``
in its header, never in the URL (AU-09). When the server answers 401, or 403
with ``error="insufficient_scope"``, the provider authorizes and sends the
request again:

1. discovery (:mod:`._discovery`): the protected resource metadata (its
   ``resource`` must be this server's), the authorization server and its
   metadata (issuer checked), or the 2025-03-26 fallbacks;
2. a refresh, for a 401 when the stored tokens came from the same server and
   have a refresh token (the new refresh token replaces the old one);
3. otherwise registration (:mod:`._registration`, AU-07's order, keyed by
   issuer) and the grant (the authorization code grant by default; any
   :class:`~trio_mcp._oauth._types.Grant`) with the chosen scope: the
   challenge's ``scope``, else the configured one, else the metadata's
   ``scopes_supported``, else none (AU-05); on a step-up, the union with what
   was asked before (SEP-2350); ``offline_access`` added when the
   authorization server lists it (SEP-2207).

Authorization server traffic goes through the provider's own
``httpx.AsyncClient``, made for each authorization, so the flows are plain
async code. One authorization runs at a time (a lock); a request that was
refused with a token another task has meanwhile replaced just retries.
Authorizing again with the same scope at the same server is allowed once
(*max_repeats*): a server that keeps refusing gets its 403 passed on to the
caller, which sees the call fail; a failed flow raises
:class:`~trio_mcp.auth.AuthorizationFailed` with the reason.

Spec: AU-04..AU-09, AU-12..AU-15.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Generator, Sequence

import attrs
import httpx
import trio

from .._errors import AuthorizationFailed
from .._tls import default_tls_context
from ._challenge import Challenge, bearer_challenge
from ._code import AuthorizationCodeGrant, refresh
from ._discovery import (
    canonical_resource,
    fetch_auth_server,
    fetch_legacy_auth_server,
    fetch_protected_resource,
    pick_authorization_server,
)
from ._egress import EgressPolicy
from ._registration import resolve_client
from ._storage import MemoryTokenStorage, TokenStorage
from ._types import (
    AuthServerMetadata,
    ClientInfo,
    DPoPSigner,
    Grant,
    GrantContext,
    ProtectedResourceMetadata,
    RedirectHandler,
    TokenResponse,
    join_scope,
    split_scope,
)

logger = logging.getLogger("trio_mcp.oauth")


class OAuthProvider(httpx.Auth):
    """OAuth 2.1 for one MCP server at *server_url* (see the module docstring).

    Args:
        server_url: the MCP endpoint (its canonical form keys the stored tokens).
        redirect: the redirect step of the authorization code grant
            (:class:`HeadlessRedirect`, :class:`LoopbackRedirect`).
        grant: another grant instead (the extension grants); then *redirect*
            is not needed.
        storage: tokens and registrations (default: in memory).
        client: pre-registered credentials (one, or one per issuer).
        client_metadata_url: the HTTPS URL of this client's ID metadata
            document, used as ``client_id`` where the server supports it.
        client_name, application_type: what dynamic registration says.
        scope: the scope to ask for when the server's challenge names none.
        offline_access: ask for ``offline_access`` (a refresh token) when the
            authorization server lists it.
        max_repeats: how many times the same scope may be authorized at the same server
            (the step-up retry limit).
        timeout: the bound on each authorization server request.
        dpop: a DPoP signer (the DPoP extension): DPoP-bound tokens are sent
            as ``Authorization: DPoP`` with a proof.
        egress: which addresses the authorization traffic may reach; default
            :meth:`EgressPolicy.for_server` of *server_url*: no private or link-local
            address, loopback only for a loopback server.

    Cancellation: a cancelled request cancels its authorization with it;
    nothing half-done is stored.

    Spec: SEC-06, AU-12.
    """

    requires_response_body = False

    def __init__(
        self,
        server_url: str,
        *,
        redirect: RedirectHandler | None = None,
        grant: Grant | None = None,
        storage: TokenStorage | None = None,
        client: ClientInfo | Sequence[ClientInfo] | None = None,
        client_metadata_url: str | None = None,
        client_name: str = "trio-mcp",
        application_type: str = "native",
        scope: str | None = None,
        offline_access: bool = True,
        max_repeats: int = 2,
        timeout: float = 30.0,
        dpop: DPoPSigner | None = None,
        egress: EgressPolicy | None = None,
    ) -> None:
        if grant is None:
            if redirect is None:
                raise TypeError("OAuthProvider needs a redirect handler or a grant")
            grant = AuthorizationCodeGrant(redirect)
        self.server_url = server_url
        self.grant: Grant = grant
        self.storage: TokenStorage = storage if storage is not None else MemoryTokenStorage()
        if client is None:
            self._pre_registered: tuple[ClientInfo, ...] = ()
        elif isinstance(client, ClientInfo):
            self._pre_registered = (client,)
        else:
            self._pre_registered = tuple(client)
        self.client_metadata_url = client_metadata_url
        self.client_name = client_name
        self.application_type = application_type
        self.scope = scope
        self.offline_access = offline_access
        self.max_repeats = max_repeats
        self.timeout = timeout
        self.dpop = dpop
        self.egress = egress if egress is not None else EgressPolicy.for_server(server_url)
        self._key = canonical_resource(server_url)
        self._lock = trio.Lock()
        self._tokens: TokenResponse | None = None
        self._loaded = False
        self._requested: list[str] = []
        self._repeats: dict[tuple[str, frozenset[str]], int] = {}
        #: What the last authorization found (for refreshing ahead of expiry).
        self._context: GrantContext | None = None

    # ------------------------------------------------------------ httpx.Auth

    async def async_auth_flow(
        self, request: httpx.Request
    ) -> AsyncGenerator[httpx.Request, httpx.Response]:
        tokens = await self._usable_tokens()
        self._apply(request, tokens)
        response = yield request
        for _ in range(3):
            status = response.status_code
            if status not in (401, 403):
                return
            challenge = bearer_challenge(response.headers.get_list("www-authenticate"))
            if (
                status == 401
                and self.dpop is not None
                and challenge is not None
                and challenge.get("error") == "use_dpop_nonce"
                and self.dpop.update_nonce(str(request.url), response)
            ):
                # RFC 9449 §9: the resource server wants a proof with its nonce.
                self._apply(request, tokens)
                response = yield request
                continue
            if status == 403 and (
                challenge is None or challenge.get("error") != "insufficient_scope"
            ):
                return  # forbidden for another reason: not ours to fix
            fresh = await self._authorize(status, challenge, tokens)
            if fresh is None:
                return  # the step-up limit: the caller gets the 403
            tokens = fresh
            self._apply(request, tokens)
            response = yield request
        if response.status_code == 401:
            raise AuthorizationFailed(
                f"{self.server_url} keeps refusing the tokens it was given", status=401
            )

    def sync_auth_flow(
        self, request: httpx.Request
    ) -> Generator[httpx.Request, httpx.Response, None]:
        raise RuntimeError("OAuthProvider works with httpx.AsyncClient only")

    # --------------------------------------------------------------- helpers

    def _apply(self, request: httpx.Request, tokens: TokenResponse | None) -> None:
        if tokens is None:
            return
        if tokens.token_type.lower() == "dpop" and self.dpop is not None:
            request.headers["Authorization"] = f"DPoP {tokens.access_token}"
            url = str(request.url.copy_with(query=None, fragment=None))
            request.headers.update(
                self.dpop.headers_for(request.method, url, access_token=tokens.access_token)
            )
        else:
            request.headers["Authorization"] = f"Bearer {tokens.access_token}"

    async def _load(self) -> TokenResponse | None:
        if not self._loaded:
            self._tokens = await self.storage.get_tokens(self._key)
            self._loaded = True
        return self._tokens

    async def _save(self, tokens: TokenResponse | None) -> None:
        await self.storage.set_tokens(self._key, tokens)
        self._tokens = tokens
        self._loaded = True

    async def _usable_tokens(self) -> TokenResponse | None:
        """The stored tokens, refreshed first when they have expired and can be."""
        tokens = await self._load()
        if tokens is None or not tokens.expired() or tokens.refresh_token is None:
            return tokens
        async with self._lock:
            current = await self._load()
            context = self._context
            if current is not tokens or context is None or current is None:
                return current
            try:
                async with self._as_client() as http:
                    fresh = await refresh(attrs.evolve(context, http=http), current)
            except (AuthorizationFailed, httpx.HTTPError) as exc:
                logger.info("refreshing the access token failed: %s", exc)
                return current
            await self._save(fresh)
            return fresh

    def _as_client(self) -> httpx.AsyncClient:
        # Redirects are never followed: each hop would be a URL nobody checked.
        return httpx.AsyncClient(
            timeout=self.timeout,
            verify=default_tls_context(),
            follow_redirects=False,
            event_hooks=self.egress.hooks(),
        )

    def _select_scope(
        self,
        challenge: Challenge | None,
        prm: ProtectedResourceMetadata | None,
        metadata: AuthServerMetadata,
        *,
        step_up: bool,
    ) -> list[str]:
        """AU-05's scope: the challenge's, else the configured one, else the
        metadata's; the union with the previous request on a re-authorization
        (SEP-2350); ``offline_access`` when the server lists it (SEP-2207)."""
        challenged = split_scope(challenge.get("scope") if challenge else None)
        if challenged:
            scopes = challenged
        elif self.scope:
            scopes = split_scope(self.scope)
        elif prm is not None and prm.scopes_supported:
            scopes = list(prm.scopes_supported)
        else:
            scopes = []
        if step_up or self._requested:
            scopes = list(dict.fromkeys([*self._requested, *scopes]))
        offered = metadata.scopes_supported or ()
        if (
            self.offline_access
            and "offline_access" in offered
            and "offline_access" not in scopes
            and isinstance(self.grant, AuthorizationCodeGrant)
        ):
            scopes.append("offline_access")
        return scopes

    async def _authorize(
        self, status: int, challenge: Challenge | None, sent: TokenResponse | None
    ) -> TokenResponse | None:
        """Tokens to retry with after a 401 or 403 (None: give the caller the 403)."""
        async with self._lock:
            current = await self._load()
            if current is not None and (sent is None or current.access_token != sent.access_token):
                return current  # another request authorized meanwhile
            async with self._as_client() as http:
                return await self._authorize_with(http, status, challenge, current)

    async def _authorize_with(
        self,
        http: httpx.AsyncClient,
        status: int,
        challenge: Challenge | None,
        current: TokenResponse | None,
    ) -> TokenResponse | None:
        challenged_prm = challenge.get("resource_metadata") if challenge else None
        prm = await fetch_protected_resource(http, self.server_url, challenged_prm)
        if prm is None:
            metadata = await fetch_legacy_auth_server(http, self.server_url)
            resource = self._key
        else:
            preferred = [current.issuer] if current and current.issuer else []
            issuer = pick_authorization_server(prm, preferred)
            metadata = await fetch_auth_server(http, issuer)
            resource = prm.resource or self._key
        context = GrantContext(
            http=http,
            resource=resource,
            server_url=self.server_url,
            metadata=metadata,
            prm=prm,
            scope=None,
            client=None,
            dpop=self.dpop,
        )
        if (
            status == 401
            and current is not None
            and current.refresh_token is not None
            and current.issuer == metadata.issuer
        ):
            client = await self._client_for(context)
            try:
                fresh = await refresh(attrs.evolve(context, client=client), current)
            except AuthorizationFailed as exc:
                logger.info("refresh refused (%s); authorizing again", exc.reason)
            else:
                await self._save(fresh)
                self._context = attrs.evolve(context, client=client)
                return fresh
        scopes = self._select_scope(challenge, prm, metadata, step_up=status == 403)
        key = (metadata.issuer, frozenset(scopes))
        if self._repeats.get(key, 0) >= self.max_repeats:
            if status == 403:
                logger.info("not authorizing %s again: the step-up limit", scopes)
                return None
            raise AuthorizationFailed(
                f"{self.server_url} refused tokens for the same scope {self.max_repeats} times",
                status=status,
            )
        self._repeats[key] = self._repeats.get(key, 0) + 1
        scope = join_scope(scopes)
        context = attrs.evolve(context, scope=scope)
        client = await self._client_for(context)
        context = attrs.evolve(context, client=client)
        tokens = await self.grant.obtain(context)
        if tokens.issuer != metadata.issuer:
            tokens = _issued_by(tokens, metadata.issuer)
        self._requested = scopes
        await self._save(tokens)
        self._context = context
        return tokens

    async def _client_for(self, context: GrantContext) -> ClientInfo | None:
        grant_metadata = self.grant.client_metadata(context.metadata)
        if grant_metadata is None and not self._pre_registered:
            return None
        return await resolve_client(
            context.http,
            context.metadata,
            grant_metadata or {},
            self.storage,
            pre_registered=self._pre_registered,
            client_metadata_url=self.client_metadata_url,
            client_name=self.client_name,
            application_type=self.application_type,
            scope=context.scope,
        )


def _issued_by(tokens: TokenResponse, issuer: str) -> TokenResponse:
    return attrs.evolve(tokens, issuer=issuer)
