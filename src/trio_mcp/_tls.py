"""The one TLS context shared by the HTTP clients trio_mcp makes for itself.

httpx builds a fresh ``ssl.SSLContext`` for every ``AsyncClient`` it creates
with the default ``verify=True``, loading the whole CA bundle each time: about
35 ms of CPU, during which the Trio loop runs nothing else. ``open_http_client``
made two such clients per session, and a token or metadata fetch one per
exchange, so opening a thousand sessions in one process blocked its loop for
over a minute. The context is built the way httpx builds its default (the CA
bundle of ``certifi``, or ``SSL_CERT_FILE``/``SSL_CERT_DIR`` when set), once per
process on first use, and shared: an ``SSLContext`` holds settings and trusted
roots, not per-connection state. An application that needs other TLS settings
passes its own ``httpx.AsyncClient``.
"""

from __future__ import annotations

import ssl
from functools import cache


@cache
def default_tls_context() -> ssl.SSLContext:
    """httpx's default client context (verification on), built once and shared."""
    import httpx

    return httpx.create_ssl_context()
