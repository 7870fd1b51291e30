"""What :meth:`Connection.receive_data` turns inbound frames into.

Each inbound frame yields one or more events (more only for a 2025-03-26 batch).
Bad input from the peer is an event too (:class:`InvalidMessage`, :class:`Ignored`),
never an exception: the session replies if a reply is owed and goes on.
"""

from __future__ import annotations

import enum
from typing import Any, TypeAlias

import attrs

from ._messages import ErrorObject, ErrorResponse, Request, RequestId
from ._methods import MethodSpec
from ._requests import Progress


@attrs.frozen(slots=True)
class RequestReceived:
    """A valid request from the peer; a record now exists for it in QUEUED."""

    request: Request
    spec: MethodSpec
    #: ``params`` structured into ``spec.params_type`` (None when it has none).
    params: Any
    #: The peer used this id before (that request was answered): against the spec's
    #: rule, but tolerated and counted in ``statistics().reused_ids``.
    #:
    #: Spec: BP-04.
    reused_id: bool = False


@attrs.frozen(slots=True)
class NotificationReceived:
    """A valid notification other than cancellation and progress."""

    method: str
    spec: MethodSpec
    params: Any
    raw_params: dict[str, Any] | None


@attrs.frozen(slots=True)
class ResponseReceived:
    """A success response to one of our requests, its result already typed."""

    request_id: RequestId
    result: Any


@attrs.frozen(slots=True)
class ErrorReceived:
    """One of our requests failed.

    ``remote`` is True for an error response the peer sent; False for a local error
    about the peer's answer (e.g. a result that does not match the schema), which must
    never be mistaken for the peer's own error.

    Spec: BP-27.
    """

    request_id: RequestId
    error: ErrorObject
    remote: bool = True
    #: The (local) error is a response over the frame bound, dropped unparsed.
    too_large: bool = False


@attrs.frozen(slots=True)
class CancelReceived:
    """The peer cancelled one of its in-flight requests.

    Spec: CN-01, CN-05.
    """

    request_id: RequestId
    reason: str | None
    #: The notification's params as received (its ``_meta`` too); not
    #: compared.
    raw_params: dict[str, Any] | None = attrs.field(default=None, eq=False)


@attrs.frozen(slots=True)
class ProgressReceived:
    """Progress for one of our in-flight requests; already checked to increase.

    Spec: PG-03.
    """

    request_id: RequestId
    progress: Progress
    #: The notification's params as received (its ``_meta`` too); not
    #: compared.
    raw_params: dict[str, Any] | None = attrs.field(default=None, eq=False)


@attrs.frozen(slots=True)
class InvalidMessage:
    """A frame we refuse; ``reply`` (if not None) is the error response owed.

    ``fatal``: the session cannot go on. A client got a frame over the size bound whose
    head names no id: it was never parsed, so the call it may have answered cannot be
    told, and would otherwise wait for its timeout. When the head names the id, that
    call fails instead (:class:`ErrorReceived` with ``too_large``) and the session goes
    on.

    Spec: R-03, X-08.
    """

    reply: ErrorResponse | None
    detail: str
    fatal: bool = False


class IgnoredReason(enum.StrEnum):
    """Why a message was ignored; equal to its word, so logs and matches read it."""

    #: A response, cancellation or progress for an id we do not know.
    UNKNOWN_ID = "unknown-id"
    #: It names a request that already ended.
    #:
    #: Spec: CN-06, A-09.
    LATE = "late"
    #: A cancellation of ``initialize``.
    #:
    #: Spec: CN-03.
    NOT_CANCELLABLE = "not-cancellable"
    #: Its params do not have the method's shape.
    MALFORMED = "malformed"
    #: Progress that did not increase.
    #:
    #: Spec: PG-04, A-10.
    NON_MONOTONIC = "non-monotonic"
    #: A notification method that is unknown, absent from the revision or sent
    #: the wrong way.
    UNKNOWN_METHOD = "unknown-method"
    #: A notification the lifecycle does not expect now.
    UNEXPECTED = "unexpected"


@attrs.frozen(slots=True)
class Ignored:
    """A message that needs no action and got none.

    Spec: CN-06, CN-10, A-09, A-10.
    """

    reason: IgnoredReason
    detail: str


Event: TypeAlias = (
    RequestReceived
    | NotificationReceived
    | ResponseReceived
    | ErrorReceived
    | CancelReceived
    | ProgressReceived
    | InvalidMessage
    | Ignored
)
