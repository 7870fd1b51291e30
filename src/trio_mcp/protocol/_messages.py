"""JSON-RPC 2.0 envelopes as MCP uses them.

``jsonrpc: "2.0"`` is not a field: the codec adds it on the way out and checks it on
the way in. ``params`` and ``result`` stay raw JSON objects at this level; the
connection types them by method (two-phase decode).

Spec: BP-01..BP-11.
"""

from __future__ import annotations

from typing import Any, TypeAlias

import attrs

from ..types import JSONValue

#: A JSON object as the envelope layer sees it (values are checked by the types).
JSONObject: TypeAlias = dict[str, Any]

__all__ = ["JSONObject", "JSONValue"]

#: A request id: a string or an integer, never bool, float or null (BP-02, BP-03).
RequestId: TypeAlias = int | str


def is_valid_request_id(value: object) -> bool:
    """True when *value* may be a request id: ``int`` (not ``bool``) or ``str``."""
    return (type(value) is int) or isinstance(value, str)


@attrs.frozen(slots=True)
class ErrorObject:
    """The ``error`` member of an error response.

    Spec: BP-07.
    """

    code: int
    message: str
    data: Any = None

    def to_json(self) -> JSONObject:
        out: JSONObject = {"code": self.code, "message": self.message}
        if self.data is not None:
            out["data"] = self.data
        return out


@attrs.frozen(slots=True)
class Request:
    """A request: expects exactly one response with the same id."""

    id: RequestId
    method: str
    params: JSONObject | None = None

    def result(self, value: JSONObject) -> Response:
        """The success response to this request."""
        return Response(id=self.id, result=value)

    def error(self, code: int, message: str, data: Any = None) -> ErrorResponse:
        """An error response to this request."""
        return ErrorResponse(id=self.id, error=ErrorObject(code, message, data))


@attrs.frozen(slots=True)
class Notification:
    """A notification: no id, never answered.

    Spec: BP-10, BP-11.
    """

    method: str
    params: JSONObject | None = None


@attrs.frozen(slots=True)
class Response:
    """A success response.

    Spec: BP-06.
    """

    id: RequestId
    result: JSONObject


@attrs.frozen(slots=True)
class ErrorResponse:
    """An error response; ``id`` is None only when the request's id was unreadable."""

    id: RequestId | None
    error: ErrorObject


#: Any JSON-RPC message.
Message: TypeAlias = Request | Notification | Response | ErrorResponse
