"""Scan captured log records for secrets (issue #15: secrets never reach logs).

Use :func:`capture_all_logs` (or the ``log_capture`` fixture: import
:func:`log_capture_fixture` into the test module) around an authorized session: every logger that
matters is set to DEBUG and recorded, ours (``trio_mcp.*``) and those of the
libraries under us (``httpx``, ``httpcore``, ``hypercorn``, the root logger
and whatever propagates to it). Then :meth:`LogCapture.leaks` reports every
record in which a secret appears, in any of the forms it travels in (as is,
URL-encoded, in an HTTP Basic credential), anywhere in the record: the
formatted message, the raw ``msg`` and ``args``, the exception text and the
stack.

Secrets are registered by kind (``"token"``, ``"code"``, ``"client secret"``,
``"private key"``), so a failure says what leaked and where, never the secret
itself. Flows added later (the OAuth client's) register their secrets and use
the same scan.
"""

from __future__ import annotations

import base64
import contextlib
import logging
import urllib.parse
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

#: The loggers set to DEBUG besides the root: every record propagates to the
#: root handler, these are named so a library that sets its own level to
#: WARNING is still heard at DEBUG.
LOGGERS = (
    "trio_mcp",
    "trio_mcp.auth",
    "trio_mcp.http",
    "trio_mcp.http.hypercorn",
    "trio_mcp.server",
    "trio_mcp.client",
    "httpx",
    "httpcore",
    "hypercorn",
    "hypercorn.error",
    "hypercorn.access",
    "authlib",
    "joserfc",
)

#: Shorter than this is no secret worth scanning for (it would match by chance).
MIN_SECRET_LENGTH = 8


def forms(secret: str) -> set[str]:
    """The ways *secret* can appear in a log line."""
    found = {secret, urllib.parse.quote(secret, safe=""), urllib.parse.quote_plus(secret)}
    return {form for form in found if len(form) >= MIN_SECRET_LENGTH}


def texts(record: logging.LogRecord) -> Iterator[str]:
    """Every piece of text a handler could write for *record*."""
    with contextlib.suppress(TypeError, ValueError):
        # A broken format still has its parts, below.
        yield record.getMessage()
    yield str(record.msg)
    if record.args:
        yield repr(record.args)
        args = record.args if isinstance(record.args, tuple) else (record.args,)
        yield from (str(arg) for arg in args)
    if record.exc_info:
        yield logging.Formatter().formatException(record.exc_info)
    if record.exc_text:
        yield record.exc_text
    if record.stack_info:
        yield record.stack_info
    for name, value in vars(record).items():
        if name not in _STANDARD:
            yield f"{name}={value!r}"  # extra= fields


_STANDARD = frozenset(vars(logging.makeLogRecord({}))) | {"message", "asctime"}


class LogCapture(logging.Handler):
    """Every record at DEBUG and up, and the secrets to look for in them."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []
        self._secrets: dict[str, str] = {}

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def secret(self, kind: str, *values: str) -> None:
        """Register *values* (secrets of *kind*) to scan for."""
        for value in values:
            if len(value) >= MIN_SECRET_LENGTH:
                self._secrets[value] = kind

    def basic_credentials(self, client_id: str, client_secret: str) -> None:
        """Register a client secret and its HTTP Basic header forms."""
        self.secret("client secret", client_secret)
        quoted = (
            urllib.parse.quote(client_id, safe=""),
            urllib.parse.quote(client_secret, safe=""),
        )
        for pair in (f"{client_id}:{client_secret}", ":".join(quoted)):
            self.secret("client secret", base64.b64encode(pair.encode()).decode())

    def private_key(self, jwk: dict[str, Any]) -> None:
        """Register the private members of a JWK (RSA ``d p q dp dq qi``, EC/OKP ``d``)."""
        for member in ("d", "p", "q", "dp", "dq", "qi", "k"):
            value = jwk.get(member)
            if isinstance(value, str):
                self.secret("private key", value)

    def leaks(self) -> list[str]:
        """``"<kind> in <logger> record: <message head>"`` for every record that
        holds a registered secret (empty: no leak). Never prints the secret."""
        found: list[str] = []
        for record in self.records:
            pieces = list(texts(record))
            for secret, kind in self._secrets.items():
                if any(form in piece for form in forms(secret) for piece in pieces):
                    head = self._redacted(str(record.msg))[:80]
                    found.append(f"{kind} in {record.name} record: {head!r}")
        return found

    def _redacted(self, text: str) -> str:
        for secret, kind in self._secrets.items():
            for form in forms(secret):
                text = text.replace(form, f"<{kind}>")
        return text

    def names(self) -> set[str]:
        """The loggers heard from (to check the capture covered the libraries)."""
        return {record.name for record in self.records}


@contextmanager
def capture_all_logs(extra: Iterable[str] = ()) -> Iterator[LogCapture]:
    """Record everything at DEBUG from the root logger and :data:`LOGGERS`
    (and *extra*) for the duration; levels and handlers are put back after."""
    capture = LogCapture()
    root = logging.getLogger()
    named = [logging.getLogger(name) for name in (*LOGGERS, *extra)]
    saved = [(logger, logger.level, logger.disabled) for logger in (root, *named)]
    root.addHandler(capture)
    try:
        for logger, _, _ in saved:
            logger.setLevel(logging.DEBUG)
            logger.disabled = False
        # A logger that does not propagate would escape the root handler.
        unpropagated = [logger for logger in named if not logger.propagate]
        for logger in unpropagated:
            logger.addHandler(capture)
        yield capture
    finally:
        root.removeHandler(capture)
        for logger in named:
            logger.removeHandler(capture)
        for logger, level, disabled in saved:
            logger.setLevel(level)
            logger.disabled = disabled


@pytest.fixture(name="log_capture")
def log_capture_fixture() -> Iterator[LogCapture]:
    """Every log record at DEBUG for the test's duration (:func:`capture_all_logs`)."""
    with capture_all_logs() as capture:
        yield capture
