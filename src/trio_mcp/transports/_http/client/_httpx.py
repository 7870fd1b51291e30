"""The httpx client the HTTP transport makes for itself, minus work a call
does not need (on the client, httpx is most of a call's cost).

* :class:`OwnHttpClient` reads a response's cookies only when it sets some.
  httpx hands every response to its cookie jar, and the jar's adapter
  rebuilds the request as a ``urllib`` request (its URL parsed again) before
  the jar finds no ``Set-Cookie``: about 30 us a call here. Cookies still
  work as in httpx (a load balancer's affinity cookie, say): a response that
  sets one is read as before, and later requests carry it.
* The transport's two clients (calls, and the session's own requests)
  share one jar: a cookie set on a call's response goes with the
  notifications and the GET stream too.
* :func:`request_url` parses an endpoint's URL once: given a string, httpx
  parses it again on every request (about 30 us).

An application that passes its own ``http_client`` gets neither; its client
is used as it is.
"""

from __future__ import annotations

import functools
import os
import socket
from typing import Any

import httpx


class _CookiesIfSet(httpx.Cookies):
    """httpx's cookies, skipping the jar for a response that sets none (the
    jar reads only ``Set-Cookie`` and ``Set-Cookie2``, so nothing changes)."""

    def extract_cookies(self, response: httpx.Response) -> None:
        headers = response.headers
        if "set-cookie" in headers or "set-cookie2" in headers:
            super().extract_cookies(response)


class OwnHttpClient(httpx.AsyncClient):
    """``httpx.AsyncClient`` whose cookie jar is read only when a response
    sets a cookie (see the module docstring).

    httpx reaches the jar through the ``cookies`` property (to merge it into
    requests and to extract a response's cookies); this class keeps its own
    behind it. Cancellation: as ``httpx.AsyncClient``.
    """

    def __init__(self, *, cookies_of: OwnHttpClient | None = None, **options: Any) -> None:
        """*options* are ``httpx.AsyncClient``'s; *cookies_of*: share that
        client's jar (the transport's two clients do, so a cookie any
        response sets goes with every later request, on either client)."""
        super().__init__(**options)
        self._own_cookies: httpx.Cookies = (
            _CookiesIfSet(options.get("cookies")) if cookies_of is None else cookies_of.cookies
        )

    @property
    def cookies(self) -> httpx.Cookies:
        return self._own_cookies

    @cookies.setter
    def cookies(self, cookies: Any) -> None:
        self._own_cookies = _CookiesIfSet(cookies)


@functools.lru_cache(maxsize=64)
def request_url(url: str) -> httpx.URL:
    """*url* parsed, once per URL (an ``httpx.URL`` is immutable, so one
    object serves every request to it)."""
    return httpx.URL(url)


def describe_failure(url: str, exc: httpx.HTTPError) -> str:
    """A failed HTTP request in words, no repr: ``cannot connect to URL:
    connection refused``, ``the connection to URL broke: ...``."""
    if isinstance(exc, httpx.UnsupportedProtocol):
        return f"cannot connect to {url}: the URL must start with http:// or https://"
    if isinstance(exc, httpx.ConnectTimeout):
        return f"cannot connect to {url}: no answer in time"
    if isinstance(exc, httpx.ConnectError):
        return f"cannot connect to {url}: {_reason(exc)}"
    if isinstance(exc, httpx.TimeoutException):
        return f"{url} did not answer in time"
    if isinstance(exc, httpx.ReadError | httpx.WriteError | httpx.RemoteProtocolError):
        return f"the connection to {url} broke: {_reason(exc)}"
    return f"the HTTP request to {url} failed: {_reason(exc)}"


def _reason(exc: BaseException) -> str:
    """The operating system's words for what failed under *exc* (its causes,
    contexts and groups searched), else its own message."""
    stack: list[BaseException] = [exc]
    seen: set[int] = set()
    while stack:
        found = stack.pop()
        if id(found) in seen:
            continue
        seen.add(id(found))
        if isinstance(found, socket.gaierror) and found.strerror:
            return f"the host was not found ({found.strerror.lower()})"
        if isinstance(found, OSError) and isinstance(found.errno, int) and found.errno > 0:
            words = os.strerror(found.errno)
            return words[0].lower() + words[1:]
        if isinstance(found, BaseExceptionGroup):
            stack.extend(found.exceptions)
        stack.extend(e for e in (found.__context__, found.__cause__) if e is not None)
    text = str(exc).strip()
    return text or type(exc).__name__
