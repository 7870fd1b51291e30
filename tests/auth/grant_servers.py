"""A small authorization server, identity provider and DPoP resource server
for the extension grant tests: one plain ASGI app on hypercorn's Trio worker
(127.0.0.1, port 0), checking what a real server checks, with joserfc.

* ``POST /token``: the AS token endpoint. Client authentication by
  ``client_secret_basic``, ``client_secret_post`` or ``private_key_jwt`` (the
  assertion's signature, ``iss`` = ``sub`` = client id, ``aud`` = the issuer,
  ``exp``, a ``jti`` never seen before); grants ``client_credentials`` and
  ``jwt-bearer`` (the assertion must be one the test accepted). A ``DPoP``
  header is checked as RFC 9449 §4.3 says (``typ``, asymmetric ``alg``, public
  ``jwk``, signature, ``htm``, ``htu``, ``iat``, unique ``jti``, the nonce when one
  is required: else 400 ``use_dpop_nonce`` with ``DPoP-Nonce``) and the token is
  bound to the key's thumbprint (``token_type`` DPoP).
* ``POST /idp/token``: the IdP's RFC 8693 token exchange, ID token to ID-JAG.
* ``POST /mcp``: a resource that takes only a DPoP-bound token with a proof
  for it (``ath``, the bound key, the RS nonce when required: else 401
  ``WWW-Authenticate: DPoP error="use_dpop_nonce"``).

Each endpoint records what it received; ``answer`` overrides the token
endpoint's answer (a hostile server).
"""

from __future__ import annotations

import base64
import hashlib
import time
import urllib.parse
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, cast

import attrs
import orjson
import trio
from hypercorn.trio import serve
from joserfc import jws, jwt
from joserfc.errors import JoseError
from joserfc.jwk import ECKey, Key, KeySet
from joserfc.jws import JWSRegistry
from joserfc.jwt import JWTClaimsRegistry

from trio_mcp.transports._http.server._app import hypercorn_config

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
Answer = tuple[int, dict[str, str], bytes]

JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"
ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token"
DPOP_ALGS = ["ES256", "ES384", "ES512", "RS256", "PS256"]
#: A proof carrying an RSA key has a header longer than joserfc's default limit.
REGISTRY = JWSRegistry(algorithms=DPOP_ALGS)
REGISTRY.max_header_length = 2048


@attrs.define
class Seen:
    """One request an endpoint received."""

    path: str
    headers: dict[str, str]
    form: dict[str, str]
    #: What the endpoint concluded ("ok", or the error it answered).
    outcome: str = ""


def _json(status: int, body: object, headers: dict[str, str] | None = None) -> Answer:
    return status, {"content-type": "application/json", **(headers or {})}, orjson.dumps(body)


def _error(status: int, error: str, headers: dict[str, str] | None = None) -> Answer:
    return _json(status, {"error": error}, headers)


def ath_of(token: str) -> str:
    digest = hashlib.sha256(token.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def _htu(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}"


@attrs.define
class GrantServer:
    """What the endpoints accept; tests change it between requests."""

    #: Set once serving: the base URL, which is also the issuer.
    base: str = ""
    #: client_id -> secret, for client_secret_basic and client_secret_post.
    secrets: dict[str, str] = attrs.field(factory=dict)
    #: client_id -> public key, for private_key_jwt.
    assertion_keys: dict[str, Key] = attrs.field(factory=dict)
    #: client_ids that are public clients (no authentication).
    public_clients: set[str] = attrs.field(factory=set)
    #: JWT bearer assertions the AS accepts as grants.
    accepted_assertions: set[str] = attrs.field(factory=set)
    #: The nonce the token endpoint requires in DPoP proofs (None: none).
    as_nonce: str | None = None
    #: The nonce the resource requires in DPoP proofs (None: none).
    rs_nonce: str | None = None
    #: The ID token the IdP accepts, and who the ID-JAG names as client.
    idp_id_token: str = "id-token-of-alice"
    idp_client_id: str = "idp-client"
    #: Overrides the token endpoint's answer (a hostile AS).
    answer: Answer | None = None
    #: Overrides the IdP's answer.
    idp_answer: Answer | None = None
    #: Whether /mcp takes Bearer tokens too (else only DPoP-bound ones).
    resource_takes_bearer: bool = False
    seen: list[Seen] = attrs.field(factory=list)
    #: access token -> the JWK thumbprint it is bound to (DPoP tokens).
    bound: dict[str, str] = attrs.field(factory=dict)
    #: Every jti seen, per endpoint path (a replay is refused).
    jtis: dict[str, set[str]] = attrs.field(factory=dict)
    #: ID-JAGs the IdP issued: value -> (audience, resource, client).
    id_jags: dict[str, tuple[str, str, str]] = attrs.field(factory=dict)
    counter: int = 0

    def requests(self, path: str) -> list[Seen]:
        return [s for s in self.seen if s.path == path]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                else:
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers: dict[str, str] = {}
        for name, value in scope["headers"]:
            key = name.decode("latin-1").lower()
            # Keep a repeated header visible (a second DPoP proof).
            headers[key] = (
                headers[key] + ", " + value.decode("latin-1")
                if key in headers
                else value.decode("latin-1")
            )
        form = {k: v[0] for k, v in urllib.parse.parse_qs(body.decode("latin-1")).items()}
        seen = Seen(scope["path"], headers, form)
        self.seen.append(seen)
        if scope["path"] == "/token":
            status, extra, payload = self.answer or self._token(seen)
        elif scope["path"] == "/idp/token":
            status, extra, payload = self.idp_answer or self._exchange(seen)
        elif scope["path"] == "/.well-known/oauth-protected-resource/mcp":
            status, extra, payload = _json(
                200, {"resource": f"{self.base}/mcp", "authorization_servers": [self.base]}
            )
        elif scope["path"] == "/.well-known/oauth-authorization-server":
            status, extra, payload = _json(200, self.metadata())
        elif scope["path"] == "/mcp":
            status, extra, payload = self._resource(seen, scope["method"])
        else:
            status, extra, payload = _error(404, "not_found")
        if not seen.outcome:
            seen.outcome = "ok" if status == 200 else f"{status}"
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(k.encode(), v.encode()) for k, v in extra.items()],
            }
        )
        await send({"type": "http.response.body", "body": payload})

    # ----------------------------------------------------------- the AS

    def metadata(self) -> dict[str, Any]:
        """RFC 8414 metadata of the AS."""
        return {
            "issuer": self.base,
            "token_endpoint": f"{self.base}/token",
            "grant_types_supported": ["client_credentials", JWT_BEARER],
            "token_endpoint_auth_methods_supported": [
                "client_secret_basic",
                "client_secret_post",
                "private_key_jwt",
                "none",
            ],
            "dpop_signing_alg_values_supported": DPOP_ALGS,
        }

    def _token(self, seen: Seen) -> Answer:
        client = self._authenticate(seen)
        if client is None:
            return _error(401, "invalid_client")
        grant = seen.form.get("grant_type")
        if grant == "client_credentials":
            pass
        elif grant == JWT_BEARER:
            assertion = seen.form.get("assertion", "")
            if assertion in self.id_jags:
                audience, _, jag_client = self.id_jags[assertion]
                if audience != self.base or jag_client != client:
                    seen.outcome = "id-jag for another audience or client"
                    return _error(400, "invalid_grant")
            elif assertion not in self.accepted_assertions:
                seen.outcome = "assertion refused"
                return _error(400, "invalid_grant")
        else:
            return _error(400, "unsupported_grant_type")
        self.counter += 1
        token = f"token-{self.counter}"
        proof = seen.headers.get("dpop")
        if proof is None:
            return _json(200, {"access_token": token, "token_type": "Bearer", "expires_in": 3600})
        checked = self._check_proof(seen, proof, "POST", f"{self.base}/token", self.as_nonce)
        if isinstance(checked, tuple):
            return checked
        self.bound[token] = checked
        return _json(200, {"access_token": token, "token_type": "DPoP", "expires_in": 3600})

    def _authenticate(self, seen: Seen) -> str | None:
        """The authenticated client id, or None (the outcome says why)."""
        authorization = seen.headers.get("authorization", "")
        if authorization.startswith("Basic "):
            decoded = base64.b64decode(authorization[6:]).decode()
            client_id, _, secret = decoded.partition(":")
            client_id, secret = urllib.parse.unquote(client_id), urllib.parse.unquote(secret)
            if self.secrets.get(client_id) == secret:
                return client_id
            seen.outcome = "bad basic credentials"
            return None
        if "client_assertion" in seen.form:
            return self._check_assertion(seen)
        client_id = seen.form.get("client_id", "")
        if "client_secret" in seen.form:
            if self.secrets.get(client_id) == seen.form["client_secret"]:
                return client_id
            seen.outcome = "bad post credentials"
            return None
        if client_id in self.public_clients:
            return client_id
        seen.outcome = "no client authentication"
        return None

    def _check_assertion(self, seen: Seen) -> str | None:
        if seen.form.get("client_assertion_type") != ASSERTION_TYPE:
            seen.outcome = "bad client_assertion_type"
            return None
        assertion = seen.form["client_assertion"]
        try:
            unverified = jws.extract_compact(assertion.encode())
            claims = orjson.loads(unverified.payload)
            key = self.assertion_keys[claims["iss"]]
            token = jwt.decode(assertion, key, algorithms=["ES256", "RS256"])
            JWTClaimsRegistry(
                leeway=5,
                iss={"essential": True, "value": claims["iss"]},
                sub={"essential": True, "value": claims["iss"]},
                aud={"essential": True, "value": self.base},
                exp={"essential": True},
                jti={"essential": True},
            ).validate(token.claims)
        except (JoseError, KeyError, ValueError) as exc:
            seen.outcome = f"assertion refused: {type(exc).__name__}: {exc}"
            return None
        if token.claims["exp"] - token.claims.get("iat", time.time()) > 300:
            seen.outcome = "assertion lives too long"
            return None
        if "client_id" in seen.form and seen.form["client_id"] != claims["iss"]:
            seen.outcome = "client_id is not the assertion's"
            return None
        used = self.jtis.setdefault("assertion", set())
        if token.claims["jti"] in used:
            seen.outcome = "assertion replayed"
            return None
        used.add(token.claims["jti"])
        return cast(str, claims["iss"])

    # ------------------------------------------------------------- DPoP

    def _check_proof(
        self,
        seen: Seen,
        proof: str,
        method: str,
        url: str,
        nonce: str | None,
        access_token: str | None = None,
    ) -> str | Answer:
        """The proof key's thumbprint, or the error answer (RFC 9449 §4.3)."""
        refused = _error(400 if access_token is None else 401, "invalid_dpop_proof")
        try:
            if "," in proof:
                raise ValueError("more than one DPoP header")
            header = jws.extract_compact(proof.encode(), registry=REGISTRY).headers()
            if header.get("typ") != "dpop+jwt" or header.get("alg") not in DPOP_ALGS:
                raise ValueError("typ or alg")
            jwk = header["jwk"]
            if "d" in jwk:
                raise ValueError("private key in jwk")
            key = KeySet.import_key_set({"keys": [jwk]}).keys[0]
            claims = jwt.decode(proof, key, algorithms=DPOP_ALGS, registry=REGISTRY).claims
            if claims.get("htm") != method:
                raise ValueError("htm")
            if "?" in claims["htu"] or "#" in claims["htu"] or _htu(claims["htu"]) != _htu(url):
                raise ValueError("htu")
            if abs(time.time() - claims["iat"]) > 60:
                raise ValueError("iat")
            used = self.jtis.setdefault(seen.path, set())
            if claims["jti"] in used:
                raise ValueError("jti replayed")
            used.add(claims["jti"])
            if access_token is not None and claims.get("ath") != ath_of(access_token):
                raise ValueError("ath")
            thumbprint = key.thumbprint()
        except (JoseError, KeyError, ValueError, TypeError) as exc:
            seen.outcome = f"proof refused: {exc}"
            return refused
        if nonce is not None and claims.get("nonce") != nonce:
            seen.outcome = "nonce required"
            if access_token is None:
                return _error(400, "use_dpop_nonce", {"dpop-nonce": nonce})
            challenge = 'DPoP error="use_dpop_nonce", algs="ES256"'
            return _error(
                401, "use_dpop_nonce", {"www-authenticate": challenge, "dpop-nonce": nonce}
            )
        return thumbprint

    # ------------------------------------------------------------ the IdP

    def _exchange(self, seen: Seen) -> Answer:
        form = seen.form
        if form.get("grant_type") != TOKEN_EXCHANGE:
            return _error(400, "unsupported_grant_type")
        if form.get("client_id") != self.idp_client_id:
            return _error(401, "invalid_client")
        problems = [
            name
            for name, wanted in (
                ("subject_token", self.idp_id_token),
                ("subject_token_type", ID_TOKEN),
                ("requested_token_type", ID_JAG),
            )
            if form.get(name) != wanted
        ]
        problems += [name for name in ("audience", "resource") if not form.get(name)]
        if problems:
            seen.outcome = "missing or wrong: " + ", ".join(problems)
            return _error(400, "invalid_request")
        self.counter += 1
        jag = f"id-jag-{self.counter}"
        # The IdP knows which client the user uses at the AS (SEP-990 §6.1).
        self.id_jags[jag] = (form["audience"], form["resource"], next(iter(self.secrets), ""))
        return _json(200, {"access_token": jag, "issued_token_type": ID_JAG, "token_type": "N_A"})

    # -------------------------------------------------------- the resource

    def _resource(self, seen: Seen, method: str) -> Answer:
        scheme, _, token = seen.headers.get("authorization", "").partition(" ")
        prm = f'resource_metadata="{self.base}/.well-known/oauth-protected-resource/mcp"'
        if not scheme:
            seen.outcome = "no token"
            return _error(401, "unauthorized", {"www-authenticate": f"DPoP {prm}"})
        if self.resource_takes_bearer and scheme == "Bearer" and token.startswith("token-"):
            return _json(200, {"ok": True})
        if scheme != "DPoP" or token not in self.bound:
            seen.outcome = "no DPoP-bound token"
            return _error(401, "invalid_token", {"www-authenticate": 'DPoP algs="ES256"'})
        proof = seen.headers.get("dpop")
        if proof is None:
            seen.outcome = "no proof"
            return _error(401, "invalid_dpop_proof")
        checked = self._check_proof(seen, proof, method, f"{self.base}/mcp", self.rs_nonce, token)
        if isinstance(checked, tuple):
            return checked
        if checked != self.bound[token]:
            seen.outcome = "proof key is not the token's"
            return _error(401, "invalid_token")
        return _json(200, {"ok": True})


@asynccontextmanager
async def running_grant_server(server: GrantServer) -> AsyncIterator[str]:
    """Serve *server*; yield its base URL (also set as ``server.base``)."""
    config = hypercorn_config("127.0.0.1", 0)
    async with trio.open_nursery() as nursery:
        binds = await nursery.start(
            lambda task_status: serve(cast(Any, server), config, task_status=task_status)
        )
        server.base = cast(list[str], binds)[0]
        yield server.base
        nursery.cancel_scope.cancel()


def ec_key_pair() -> tuple[str, ECKey]:
    """A new P-256 key: its private PKCS#8 PEM, and the public key."""
    key = ECKey.generate_key("P-256")
    pem = key.as_pem(private=True).decode()
    return pem, ECKey.import_key(key.as_dict(private=False))
