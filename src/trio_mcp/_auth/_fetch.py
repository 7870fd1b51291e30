"""Bounded JSON fetches for the token verifiers (the JWKS, introspection).

One HTTP exchange, its answer read up to a size bound and parsed as a JSON
object; anything else (unreachable, timeout, non-200, too large, not a JSON
object) is :class:`VerifierUnavailable`: the verifier cannot decide, which is
a 503 and not a 401 (AU-08). Messages name the URL and what went wrong, never
a request body (the introspection body holds the token, AU-11).

Cancellation: cancellable at any point; nothing is kept from a cancelled
fetch (the connection goes back to, or is dropped by, the httpx client).
"""

from __future__ import annotations

from typing import Any

import httpx
import orjson

from .._tls import default_tls_context
from ._token import VerifierUnavailable

#: The largest answer read (a JWKS of a few dozen keys is well under this).
MAX_ANSWER_BYTES = 1 << 20
#: Used when the caller gives no httpx client of its own.
DEFAULT_TIMEOUT = httpx.Timeout(10.0)


async def fetch_json(
    http: httpx.AsyncClient | None,
    method: str,
    url: str,
    *,
    max_bytes: int = MAX_ANSWER_BYTES,
    **request: Any,
) -> dict[str, Any]:
    """The JSON object *url* answers *method* with (status 200 only).

    *http* None: a client of its own for this one exchange.

    Raises:
        VerifierUnavailable: the exchange failed or its answer is not usable.
    """
    if http is None:
        async with httpx.AsyncClient(timeout=DEFAULT_TIMEOUT, verify=default_tls_context()) as own:
            return await _exchange(own, method, url, max_bytes, request)
    return await _exchange(http, method, url, max_bytes, request)


async def _exchange(
    http: httpx.AsyncClient, method: str, url: str, max_bytes: int, request: dict[str, Any]
) -> dict[str, Any]:
    try:
        async with http.stream(method, url, **request) as response:
            if response.status_code != 200:
                raise VerifierUnavailable(f"{url} answered {response.status_code}")
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > max_bytes:
                    raise VerifierUnavailable(f"{url} answered more than {max_bytes} bytes")
    except httpx.HTTPError as exc:
        # The class name only: httpx messages are about the connection, but
        # there is no need to repeat anything of the request.
        raise VerifierUnavailable(f"{url} unreachable ({type(exc).__name__})") from None
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        raise VerifierUnavailable(f"{url} answered something that is not JSON") from None
    if not isinstance(value, dict):
        raise VerifierUnavailable(f"{url} answered JSON that is not an object")
    return value
