"""Redirect handlers: where the user (or a test) meets the authorization server.

:class:`HeadlessRedirect` GETs the authorization URL without following
redirects and returns the ``Location`` it is sent to: an authorization server
that approves without a user (the conformance harness, tests).
:class:`LoopbackRedirect` is for a person at a terminal: it listens on
127.0.0.1 (an ephemeral port), registers ``http://127.0.0.1:<port>/callback``
as the redirect URI (RFC 8252 §7.3), prints the URL for the user to open, and
waits, bounded by a timeout, for the browser to come back with the code.

Spec: AU-14 (redirect URIs on localhost).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from types import TracebackType
from urllib.parse import urljoin, urlsplit

import h11
import httpx
import trio

from .._errors import AuthorizationFailed
from .._tls import default_tls_context

logger = logging.getLogger("trio_mcp.oauth")

_CODE = re.compile(r"([?&]code=)[^&'\s\\]+")


class _RedactCodes(logging.Filter):
    """httpcore logs response headers at DEBUG, the redirect's ``Location``
    with its authorization code among them: the code is redacted from
    httpcore's records (a code is a credential until redeemed)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str) and "code=" in record.msg:
            record.msg = _CODE.sub(r"\1[redacted]", record.msg)
        return True


def _install_redaction() -> None:
    for name in ("httpcore.http11", "httpcore.http2"):
        target = logging.getLogger(name)
        if not any(isinstance(f, _RedactCodes) for f in target.filters):
            target.addFilter(_RedactCodes())


class HeadlessRedirect:
    """Follow the authorization URL to its redirect without a browser.

    Cancellation: cancelling :meth:`authorize` abandons the GET.
    """

    def __init__(
        self, redirect_uri: str = "http://localhost:3000/callback", *, timeout: float = 30.0
    ) -> None:
        self._redirect_uri = redirect_uri
        self._timeout = timeout

    @property
    def redirect_uri(self) -> str:
        return self._redirect_uri

    async def authorize(self, url: str) -> str:
        _install_redaction()
        async with httpx.AsyncClient(
            follow_redirects=False, timeout=self._timeout, verify=default_tls_context()
        ) as http:
            try:
                response = await http.get(url)
            except httpx.HTTPError as exc:
                raise AuthorizationFailed(f"the authorization request failed: {exc!r}") from exc
        location = response.headers.get("location")
        if not response.is_redirect or not location:
            raise AuthorizationFailed(
                f"the authorization endpoint answered HTTP {response.status_code}, no redirect"
            )
        return str(urljoin(url, location))


_PAGE = b"<!doctype html><title>Authorized</title><p>You can close this window.</p>\n"


class LoopbackRedirect:
    """A loopback redirect listener (``async with LoopbackRedirect() as redirect``).

    *show* is called with the authorization URL (default: print it); the
    callback must arrive within *timeout* seconds, else
    :class:`~trio_mcp.auth.AuthorizationFailed`. The listener is closed when the
    block is left.

    Cancellation: leaving the block or cancelling :meth:`authorize` closes the
    listener and any half-read connection.
    """

    def __init__(
        self,
        *,
        timeout: float = 300.0,
        path: str = "/callback",
        show: Callable[[str], None] | None = None,
    ) -> None:
        self._timeout = timeout
        self._path = path
        self._show = show or (
            lambda url: print(f"Open this URL to authorize:\n  {url}", flush=True)
        )
        self._listener: trio.SocketListener | None = None
        self._port = 0

    async def __aenter__(self) -> LoopbackRedirect:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self._listener = listeners[0]
        self._port = self._listener.socket.getsockname()[1]
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._listener is not None:
            await self._listener.aclose()
            self._listener = None

    @property
    def redirect_uri(self) -> str:
        if self._listener is None:
            raise RuntimeError("LoopbackRedirect is used inside 'async with'")
        return f"http://127.0.0.1:{self._port}{self._path}"

    async def authorize(self, url: str) -> str:
        listener = self._listener
        if listener is None:
            raise RuntimeError("LoopbackRedirect is used inside 'async with'")
        if urlsplit(url).scheme.lower() not in ("http", "https"):
            raise AuthorizationFailed(f"refused to open a non-HTTP authorization URL: {url!r}")
        self._show(url)
        with trio.move_on_after(self._timeout):
            while True:
                stream = await listener.accept()
                async with stream:
                    target = await _read_callback(stream, self._path)
                if target is not None:
                    return f"http://127.0.0.1:{self._port}{target}"
        raise AuthorizationFailed(f"no authorization callback within {self._timeout:g}s")


async def _read_callback(stream: trio.SocketStream, path: str) -> str | None:
    """Read one HTTP request; answer it; its target if it is the callback.

    Anything malformed is answered 400 and ignored (bounded: 16 KiB, 10 s).
    """
    conn = h11.Connection(h11.SERVER, max_incomplete_event_size=16384)
    with trio.move_on_after(10):
        try:
            while True:
                event = conn.next_event()
                if event is h11.NEED_DATA:
                    data = await stream.receive_some(4096)
                    conn.receive_data(data)
                    if not data:
                        return None
                    continue
                if isinstance(event, h11.Request):
                    target = event.target.decode("ascii", "replace")
                    ok = event.method == b"GET" and urlsplit(target).path == path
                    body = _PAGE if ok else b"Not found\n"
                    headers = [("content-type", "text/html; charset=utf-8" if ok else "text/plain")]
                    headers.append(("content-length", str(len(body))))
                    headers.append(("connection", "close"))
                    await stream.send_all(
                        conn.send(h11.Response(status_code=200 if ok else 404, headers=headers))
                        or b""
                    )
                    await stream.send_all(conn.send(h11.Data(data=body)) or b"")
                    await stream.send_all(conn.send(h11.EndOfMessage()) or b"")
                    return target if ok else None
                return None
        except (h11.RemoteProtocolError, trio.BrokenResourceError):
            logger.debug("a malformed request at the redirect listener")
            return None
    return None
