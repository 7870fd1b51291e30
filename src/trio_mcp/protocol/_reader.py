"""Reading what the peer sent into events: the rules both eras share.

Theory of operation
-------------------
The connection decodes a frame and dispatches each message by its kind; a
:class:`MessageReader` reads it, as h11's readers turn bytes into events. It
holds what never changes during a connection (our role and capabilities, the
converter, the request book, the handshake's hooks, the cancellation and
progress rules) and is handed, with each message, the era in force and the
negotiated version, which the connection owns.

* **A frame that is no message** (:meth:`MessageReader.frame_error`): a
  malformed response to one of our calls fails that call at once (J-07, J-08);
  a client ends the session on an oversize frame it cannot attribute (R-03),
  ignores a line that is not JSON (F-06) and, in 2026-07-28, answers nothing
  (SI-07); otherwise the refusal owed is returned, with a null id when the id
  is in use (BP-04).
* **A request** is checked by its era (``_handshake.py``, ``_modern.py``),
  then by :meth:`MessageReader.body`: our capability gate (-32601, LC-11), the
  params (-32602 with path-labelled ``data``), the progress token (-32602).
* **A response** ends our request (:meth:`MessageReader.response`), read into
  the type its era says; late and unknown ones are ignored and noted.
* **A notification** (:meth:`MessageReader.notification`): cancellation and
  progress by their rules (``_cancel.py``, ``_progress.py``), the rest
  structured and handed up; unknown ones are ignored.

Bad input from the peer yields an event, never an exception.
"""

from __future__ import annotations

from typing import Any

import cattrs

from ._book import RequestBook
from ._cancel import Cancellation
from ._codec import FrameError
from ._era import Era, Side
from ._errors import ErrorCode
from ._events import (
    ErrorReceived,
    Event,
    Ignored,
    IgnoredReason,
    InvalidMessage,
    NotificationReceived,
    ResponseReceived,
)
from ._handshake import HandshakeEra
from ._lifecycle import Role
from ._messages import (
    ErrorObject,
    ErrorResponse,
    JSONObject,
    Notification,
    Request,
    RequestId,
    Response,
    is_valid_request_id,
)
from ._methods import METHODS, Kind, MethodSpec, lookup
from ._progress import ProgressReports
from ._requests import RequestEvent, RequestState
from ._revisions import Revision

_BAD_TOKEN: Any = object()


def _progress_token(params: JSONObject | None) -> Any:
    if not params:
        return None
    meta = params.get("_meta")
    if not isinstance(meta, dict) or "progressToken" not in meta:
        return None
    token = meta["progressToken"]
    return token if is_valid_request_id(token) else _BAD_TOKEN


def describe_structure_error(exc: BaseException) -> list[str]:
    """Readable, path-labelled lines for a cattrs structuring failure."""
    if isinstance(exc, cattrs.BaseValidationError):
        return cattrs.transform_error(exc)
    return [str(exc)]


class MessageReader:
    """Reads the peer's messages into events for one side of one connection.

    Args:
        side: this end of the connection (our role, capabilities, converter).
        book: the connection's requests.
        handshake: the handshake era, whose lifecycle a response to
            ``initialize`` and ``notifications/initialized`` move.
        progress, cancellation: the rules of those notifications.
    """

    __slots__ = ("_book", "_cancellation", "_handshake", "_progress", "_side")

    def __init__(
        self,
        side: Side,
        book: RequestBook,
        *,
        handshake: HandshakeEra,
        progress: ProgressReports,
        cancellation: Cancellation,
    ) -> None:
        self._side = side
        self._book = book
        self._handshake = handshake
        self._progress = progress
        self._cancellation = cancellation

    def frame_error(self, item: FrameError, era: Era) -> Event:
        """A frame that is no valid message (F-*, J-*, R-03)."""
        if item.response_id is not None:
            failed = self._fail_call(item.response_id, item.detail, too_large=item.too_large)
            if failed is not None:
                return failed
        if self._side.role is Role.CLIENT:
            if (
                item.too_large
                and item.response_id is None
                and (item.reply is None or item.reply.id is None)
            ):
                # Over the bound with no id the head could tell: the call it may
                # answer cannot be known, so the session ends. With an id, a
                # response fails its call above and a request is answered below;
                # either way the frame was dropped whole and the session goes on.
                self._book.count_invalid()
                return InvalidMessage(None, item.detail, fatal=True)
            if item.reply is not None and item.reply.error.code == ErrorCode.PARSE_ERROR:
                # A line that is not JSON from a server is noise (a stray
                # print, a log line): counted, not answered (reliability F-06).
                return self.invalid(None, item.detail)
            if item.reply is not None and era.silent:
                # 2026-07-28: a client writes no responses, not even an error
                # for a malformed frame (PT-01, SI-07): counted, not answered.
                return self.invalid(None, item.detail)
        reply = item.reply
        if reply is not None and self._book.id_in_use(reply.id):
            # A malformed request reusing an id: answering with that id would
            # read as a response to the original request (as for duplicates).
            reply = ErrorResponse(None, reply.error)
        return self.invalid(reply, item.detail)

    def _fail_call(
        self, request_id: RequestId, detail: str, *, too_large: bool = False
    ) -> ErrorReceived | None:
        """A malformed response for one of our requests in flight: fail it now
        (J-07, J-08), rather than leave its caller to its timeout. *too_large*:
        the response was over the frame bound (its id read from its head)."""
        book = self._book
        entry = book.outbound_entry(request_id)
        if entry is None or entry.state is not RequestState.RUNNING:
            return None
        book.count_invalid()
        what = "Oversize" if too_large else "Malformed"
        error = ErrorObject(
            int(ErrorCode.INVALID_PARAMS),
            f"{what} response for {entry.method} from the peer",
            {"errors": [detail]},
        )
        book.finish(entry, RequestEvent.FAIL, error=error)
        return ErrorReceived(entry.id, error, remote=False, too_large=too_large)

    def invalid(self, reply: ErrorResponse | None, detail: str) -> InvalidMessage:
        """Bad input, counted; *reply* is the refusal owed, if any."""
        self._book.count_invalid()
        return InvalidMessage(reply, detail)

    def refusal(self, request_id: RequestId, error: ErrorObject) -> InvalidMessage:
        """A request refused with *error*, answered with its id."""
        return self.invalid(ErrorResponse(request_id, error), error.message)

    def _ignore(self, reason: IgnoredReason, detail: str) -> Ignored:
        self._book.count_ignored()
        return Ignored(reason, detail)

    def duplicate(self, request_id: RequestId) -> InvalidMessage:
        """A request whose id is in use, refused with a null id: replying with
        the duplicated id would look like a second response to the original
        request (BP-04, A-14)."""
        return self.invalid(
            ErrorResponse(
                None,
                ErrorObject(
                    int(ErrorCode.INVALID_REQUEST),
                    f"Request id {request_id!r} was already used in this session",
                    {"duplicateId": request_id},
                ),
            ),
            f"duplicate id {request_id!r}",
        )

    def body(
        self, request: Request, spec: MethodSpec, version: str | None
    ) -> Event | tuple[Any, Any]:
        """The checks of both eras after the method's: our own capability gate
        (-32601, LC-11), the params (-32602, path-labelled ``data``) and
        ``_meta.progressToken`` (-32602, PG-01). Returns the refusal, or the
        structured params and the token."""
        gate = spec.gate(version)
        if (
            gate is not None
            and gate.held_by(self._side.role, receiving=True)
            and not gate.declared_in(self._side.capabilities)
        ):
            return self.refusal(
                request.id,
                ErrorObject(
                    int(ErrorCode.METHOD_NOT_FOUND),
                    f"Method not found: {spec.name} ({gate} was not declared)",
                ),
            )
        params_or_error = self.structure_params(spec, request.params)
        if isinstance(params_or_error, ErrorObject):
            return self.refusal(request.id, params_or_error)
        token = _progress_token(request.params)
        if token is _BAD_TOKEN:
            return self.refusal(
                request.id,
                ErrorObject(
                    int(ErrorCode.INVALID_PARAMS),
                    "_meta.progressToken must be a string or an integer",
                ),
            )
        return params_or_error, token

    def structure_params(self, spec: MethodSpec, params: JSONObject | None) -> Any:
        """*params* structured into *spec*'s params type, or the -32602 error."""
        if params is None:
            if spec.params_required:
                return ErrorObject(
                    int(ErrorCode.INVALID_PARAMS),
                    f"Invalid params for {spec.name}: params are required",
                )
            return None
        params_type = spec.params_type
        if params_type is None:
            return None
        try:
            return self._side.converter.structure(params, params_type)
        except Exception as exc:  # cattrs raises groups; they never leave this layer
            return ErrorObject(
                int(ErrorCode.INVALID_PARAMS),
                f"Invalid params for {spec.name}",
                {"errors": describe_structure_error(exc)},
            )

    def notification(
        self, note: Notification, era: Era, version: str | None, revision: Revision | None
    ) -> Event:
        """A notification from the peer, in the negotiated *version*, if any."""
        method = note.method
        if method == "notifications/cancelled":
            return self._cancellation.receive(note.params, modern_client=era.silent)
        if method == "notifications/progress":
            event = self._progress.receive(note.params, revision)
            if event is not None:
                return event
            # A 2025-11-25 task's progress: its request has long been answered
            # (the token lives as long as the task), so no request record
            # takes it; it goes up as a notification for the task's holder.
            progress = METHODS[method]
            structured = self.structure_params(progress, note.params)
            if isinstance(structured, ErrorObject):
                return self._ignore(IgnoredReason.MALFORMED, f"task progress: {structured.message}")
            return NotificationReceived(method, progress, structured, note.params)
        spec = lookup(method, self._side.custom)
        if (
            spec is None
            or spec.kind is not Kind.NOTIFICATION
            or not spec.exists_in(version)
            or not spec.sender.allows(self._side.role.peer)
        ):
            return self._ignore(IgnoredReason.UNKNOWN_METHOD, f"notification {method!r} ignored")
        params = self.structure_params(spec, note.params)
        if isinstance(params, ErrorObject):
            return self._ignore(
                IgnoredReason.MALFORMED, f"{method}: {params.message}: {params.data}"
            )
        if method == "notifications/initialized":
            unexpected = self._handshake.receive_initialized()
            if unexpected is not None:
                return self._ignore(IgnoredReason.UNEXPECTED, unexpected)
        return NotificationReceived(method, spec, params, note.params)

    def response(self, response: Response | ErrorResponse, era: Era) -> Event:
        """A response to one of our requests: it ends the request (J-07,
        CN-06: late or unknown ones are ignored and noted)."""
        if response.id is None:
            error = response.error if isinstance(response, ErrorResponse) else None
            return self._ignore(
                IgnoredReason.UNKNOWN_ID, f"error without id from the peer: {error}"
            )
        book = self._book
        entry = book.outbound_entry(response.id)
        if entry is None or entry.state is not RequestState.RUNNING:
            if entry is not None:
                entry.note_late(f"response in {entry.state.value}")
            elif book.note_late_response(response.id):
                return self._ignore(IgnoredReason.LATE, f"late response for {response.id!r}")
            return self._ignore(
                IgnoredReason.UNKNOWN_ID, f"response for unknown id {response.id!r}"
            )
        if isinstance(response, ErrorResponse):
            book.finish(entry, RequestEvent.FAIL, error=response.error)
            if entry.method == "initialize":
                self._handshake.initialize_refused()
            return ErrorReceived(entry.id, response.error, remote=True)
        result_type = era.result_type(entry, response.result)
        if type(result_type) is ErrorObject:
            book.finish(entry, RequestEvent.FAIL, error=result_type)
            return ErrorReceived(entry.id, result_type, remote=False)
        try:
            result: Any = self._side.converter.structure(response.result, result_type)
        except Exception as exc:
            error = ErrorObject(
                int(ErrorCode.INVALID_PARAMS),
                f"Invalid result for {entry.method} from the peer",
                {"errors": describe_structure_error(exc)},
            )
            book.finish(entry, RequestEvent.FAIL, error=error)
            return ErrorReceived(entry.id, error, remote=False)
        book.finish(entry, RequestEvent.COMPLETE)
        return ResponseReceived(entry.id, result)
