"""A fixed table of bearer tokens, for development and tests.

:class:`StaticTokenVerifier` knows a handful of tokens and what each one means.
It has no expiry, no revocation and no key rotation: production servers use the
JWT or the introspection verifier.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping

import trio

from ._token import AccessToken, InvalidToken


class StaticTokenVerifier:
    """A :class:`~trio_mcp.auth.TokenVerifier` over a table ``token -> AccessToken``.

    Tokens are compared in constant time, so a probe learns nothing from timing.
    An ``AccessToken`` whose ``expires_at`` has passed is still answered: the
    :class:`~trio_mcp.auth.ResourceServer` refuses it.

    Cancellation: ``verify`` is a checkpoint, nothing else.
    """

    def __init__(self, tokens: Mapping[str, AccessToken]) -> None:
        self._tokens = dict(tokens)

    async def verify(self, token: str) -> AccessToken:
        await trio.lowlevel.checkpoint()
        found: AccessToken | None = None
        presented = token.encode("utf-8", "surrogatepass")
        for known, access in self._tokens.items():
            if hmac.compare_digest(known.encode("utf-8", "surrogatepass"), presented):
                found = access
        if found is None:
            raise InvalidToken("unknown token")
        return found
