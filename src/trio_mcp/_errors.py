"""Exceptions raised to users of trio_mcp (the session and high-level APIs).

All derive from :class:`MCPError`, defined in the protocol layer (which every
layer may import) and re-exported here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from . import types as mcp_types
from .protocol import CancelOrigin, ErrorCode, ErrorObject, MCPError


class RPCError(MCPError):
    """A JSON-RPC error.

    Raised to a caller when the peer answered with an error response; raised by a
    handler to answer with that error. ``code`` is a JSON-RPC/MCP error code.
    """

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{message} (code {code})")
        self.code = code
        self.message = message
        self.data = data

    @classmethod
    def from_error(cls, error: ErrorObject) -> RPCError:
        """The exception for an error response: :class:`URLElicitationRequired`
        for a well-formed -32042, an :class:`RPCError` for anything else."""
        if error.code == ErrorCode.URL_ELICITATION_REQUIRED:
            try:
                data = mcp_types.converter.structure(
                    error.data, mcp_types.URLElicitationRequiredErrorData
                )
            except Exception:  # malformed data from the peer: keep the plain error
                pass
            else:
                return URLElicitationRequired(data.elicitations, error.message)
        return cls(error.code, error.message, error.data)

    def to_error(self) -> ErrorObject:
        return ErrorObject(self.code, self.message, self.data)


class URLElicitationRequired(RPCError):
    """-32042: the request cannot proceed until the user completes URL elicitations.

    2025-11-25 only. A server handler raises it, listing the URL-mode elicitations to
    complete (each with its ``elicitation_id``); a client that gets it from a call
    raises it too, with :attr:`elicitations` typed, so the host can ask the user's
    consent to open each URL (see :func:`trio_mcp.url_elicitation` for the checked,
    displayable form) and retry the call afterwards, for instance after
    :meth:`Client.wait_elicitation_complete`.

    Sent to a client that did not declare ``elicitation.url`` (or speaks an
    older revision), it becomes -32603 saying so: the code exists only for
    clients that can act on it.

    Spec: EL-10.
    """

    def __init__(
        self,
        elicitations: Sequence[mcp_types.ElicitRequestURLParams],
        message: str = "This request requires the user to complete an elicitation",
    ) -> None:
        self.elicitations = list(elicitations)
        data = mcp_types.converter.unstructure(
            mcp_types.URLElicitationRequiredErrorData(elicitations=self.elicitations)
        )
        super().__init__(int(ErrorCode.URL_ELICITATION_REQUIRED), message, data)


class InvalidPeerResult(MCPError):
    """The peer answered with a result that does not match the method's schema.

    A local error: the peer sent a success response, we could not use it. ``errors``
    lists what was wrong, path by path.

    Spec: BP-27.
    """

    def __init__(self, message: str, errors: list[str]) -> None:
        super().__init__(message + ": " + "; ".join(errors))
        self.errors = errors


class ResponseTooLarge(InvalidPeerResult):
    """The peer's response to this call was over the frame bound (the session's
    ``max_message_size``), so it was dropped unread.

    Its id was read from the frame's head (a bounded scan, never a full parse), so
    this call fails at once instead of at its timeout; the session goes on (the
    frame was dropped whole, and stdio framing resumes at the next line). Raise the
    bound (``max_message_size``) if such results are expected.
    """


class MiddlewareError(RPCError):
    """A middleware failed: its own code raised while it wrapped a request or a
    notification (the exception it raised is ``__cause__``), or it swallowed
    a handler's exception without giving a result to answer with.

    It fails that one request with -32603 (the peer is told only "Internal
    error"; the log names the middleware), and nothing else. ``middleware``
    names it, ``method`` is what it wrapped, ``stage`` is ``"before"`` or
    ``"after"`` the inner part.
    """

    def __init__(
        self, middleware: str, method: str, stage: str, *, swallowed: bool = False
    ) -> None:
        self.middleware = middleware
        self.method = method
        self.stage = stage
        if swallowed:
            text = (
                f"{middleware} swallowed the error of {method} without setting a result; "
                "set call.result or let the error through"
            )
        else:
            text = (
                f"middleware {middleware} failed {stage} {method}; "
                "its exception is the cause of this one"
            )
        super().__init__(int(ErrorCode.INTERNAL_ERROR), "Internal error")
        self.args = (text,)

    def __str__(self) -> str:
        return str(self.args[0])


class SessionClosed(MCPError):
    """The session is closed (or closed while the call waited).

    ``origin`` is SHUTDOWN when we closed it, TRANSPORT when the connection was
    lost; ``reason`` says why. The original exception, if any, is ``__cause__``.
    """

    def __init__(self, reason: str, origin: CancelOrigin = CancelOrigin.TRANSPORT) -> None:
        super().__init__(reason)
        self.reason = reason
        self.origin = origin


class RequestTimeout(MCPError):
    """The request's own timeout fired.

    Raised instead of :class:`trio.Cancelled`, so a timeout and a cancellation by the
    caller's own scope can be told apart. ``idle`` is True when it fired because no
    progress arrived within ``progress_idle_timeout``; False when the hard
    ``max_duration`` cap fired.

    Spec: TO-01, TO-02, TO-05.
    """

    def __init__(self, method: str, seconds: float, *, idle: bool) -> None:
        what = "without progress" if idle else "in total"
        super().__init__(f"{method} timed out after {seconds:g}s {what}")
        self.method = method
        self.seconds = seconds
        self.idle = idle


class HandshakeRefused(MCPError):
    """The server refused the handshake: no session could be started.

    Raised by the Streamable HTTP client when the ``initialize`` POST is
    answered with an error status (400, 401, 403, 404, 405, 415, 5xx), with a
    body that is a JSON-RPC error, HTML or empty, or with no answer, and the
    2024-11-05 HTTP+SSE fallback (when tried) found no usable endpoint. The
    message says what the server answered and what was tried. ``status`` is the
    HTTP status of the ``initialize`` POST (None when it had none);
    ``supported`` lists the revisions the server named when it refused the
    offered one (-32022): a server that speaks only revisions of another era.

    Spec: HT-06, SS-08.
    """

    def __init__(
        self, message: str, *, status: int | None = None, supported: Sequence[str] = ()
    ) -> None:
        super().__init__(message)
        self.status = status
        self.supported = tuple(supported)


class MissingExtra(MCPError, ImportError):
    """A part of trio_mcp that needs an optional dependency was asked for
    without the extra that installs it (``pip install 'trio_mcp[<extra>]'``).

    An :class:`ImportError` too, as the import it stands for failed; the
    message is one sentence naming the extra. ``extra`` is its name.
    """

    def __init__(self, what: str, extra: str) -> None:
        super().__init__(f"{what} needs the {extra} extra: pip install 'trio_mcp[{extra}]'")
        self.extra = extra


class AuthorizationFailed(MCPError):
    """The client could not obtain an access token the server accepts.

    Raised by :class:`trio_mcp.auth.OAuthProvider` (through the HTTP client it
    authorizes) when discovery, registration or a grant failed, or the
    authorization server's answer was refused (a ``state`` or ``iss`` mismatch,
    metadata whose ``issuer`` is not the one asked for, protected resource
    metadata naming another resource, no PKCE S256). ``reason`` says which;
    ``status`` is the HTTP status of the MCP request that needed the token
    (401 or 403) when there was one.

    Spec: AU-04..AU-08, AU-12..AU-15.
    """

    def __init__(self, reason: str, *, status: int | None = None) -> None:
        super().__init__(f"Authorization failed: {reason}")
        self.reason = reason
        self.status = status


__all__ = [
    "AuthorizationFailed",
    "ErrorCode",
    "HandshakeRefused",
    "InvalidPeerResult",
    "MCPError",
    "MissingExtra",
    "RPCError",
    "RequestTimeout",
    "SessionClosed",
    "URLElicitationRequired",
]
