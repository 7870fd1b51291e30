"""Our answers to the peer's requests: the result or the error, and the record.

Theory of operation
-------------------
When a handler returns, :meth:`Replies.result` serializes what it returned
(with the side's converter), lets the era decorate it (2026-07-28:
``resultType``, ``serverInfo``, the cache hints; see ``ModernEra.result``),
encodes it at once and finishes the record COMPLETED. A result that is not
JSON (NaN, a 65-bit integer, an unknown type) fails the request instead, with
-32603 and no internals: the handler's bug is the peer's error, never the
writer's.

When a handler fails, :meth:`Replies.error` finishes the record FAILED.
-32042 (URL elicitation required) exists only in revisions with URL
elicitation and only for a client that declared ``elicitation.url`` (EL-10):
to any other peer it becomes -32603 saying so, and that is what the record
keeps.

Either way nothing is returned to write after the peer cancelled the request
(CN-05): the record still ends.
"""

from __future__ import annotations

from typing import Any

from ._book import RequestBook
from ._codec import encode_result
from ._errors import ErrorCode, LocalProtocolError
from ._lifecycle import Role
from ._messages import ErrorObject, ErrorResponse, JSONObject, RequestId, Response
from ._modern import ModernEra
from ._requests import RequestEvent, RequestState
from ._revisions import V2025_11_25, Revision
from ._sending import OutboundMessages


class Replies:
    """The answers of one side to the inbound requests of one :class:`RequestBook`
    (see the module).

    Args:
        role: which end this is (only a server asks for URL elicitation).
        book: the connection's requests.
        modern: the modern era's rules (the results of 2026-07-28 requests).
        outbound: what turns a result into JSON (the side's converter).
    """

    __slots__ = ("_book", "_modern", "_outbound", "_role")

    def __init__(
        self, role: Role, book: RequestBook, modern: ModernEra, outbound: OutboundMessages
    ) -> None:
        self._role = role
        self._book = book
        self._modern = modern
        self._outbound = outbound

    def result(
        self,
        request_id: RequestId,
        result: Any,
        revision: Revision | None,
        peer_capabilities: JSONObject,
    ) -> Response | ErrorResponse | None:
        """The response carrying *result* (see :meth:`Connection.respond`).

        Raises:
            LocalProtocolError: the request was never started.
        """
        entry = self._book.inbound_entry(request_id)
        if entry is None:
            return None
        if entry.state is not RequestState.RUNNING:
            # COMPLETE is not a transition from QUEUED: the record would stay
            # QUEUED forever while a response went out. The caller's bug, so raise.
            raise LocalProtocolError(f"respond() for {request_id!r} before start_inbound()")
        raw = self._outbound.to_json(result) or {}
        if entry.envelope is not None:
            decorated = self._modern.result(entry, raw)
            if isinstance(decorated, ErrorObject):
                return self.error(request_id, decorated, revision, peer_capabilities)
            raw = decorated
        try:
            data = encode_result(request_id, raw)
        except LocalProtocolError as exc:
            return self.error(
                request_id,
                ErrorObject(int(ErrorCode.INTERNAL_ERROR), f"Internal error: {exc}"),
                revision,
                peer_capabilities,
            )
        entry.encoded = data
        self._book.finish(entry, RequestEvent.COMPLETE)
        if entry.peer_cancelled:
            return None
        return Response(request_id, raw)

    def error(
        self,
        request_id: RequestId,
        error: ErrorObject,
        revision: Revision | None,
        peer_capabilities: JSONObject,
    ) -> ErrorResponse | None:
        """The error response carrying *error* (see :meth:`Connection.respond_error`)."""
        entry = self._book.inbound_entry(request_id)
        if entry is None:
            return None
        if error.code == ErrorCode.URL_ELICITATION_REQUIRED and not self._url_elicitation_ok(
            revision, peer_capabilities
        ):
            error = ErrorObject(
                int(ErrorCode.INTERNAL_ERROR),
                "Internal error: the server needs a URL elicitation, which this client "
                f"did not declare (elicitation.url, protocol {V2025_11_25.version})",
            )
        self._book.finish(entry, RequestEvent.FAIL, error=error)
        if entry.peer_cancelled:
            return None
        return ErrorResponse(request_id, error)

    def _url_elicitation_ok(self, revision: Revision | None, peer_capabilities: JSONObject) -> bool:
        caps = peer_capabilities.get("elicitation")
        return (
            revision is not None
            and revision.url_elicitation
            and self._role is Role.SERVER
            and isinstance(caps, dict)
            and isinstance(caps.get("url"), dict)
        )
