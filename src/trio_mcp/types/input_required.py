"""Multi round-trip requests (2026-07-28): input-required results and their answers.

Mirrors the spec page ``basic/patterns/mrtr`` of 2026-07-28 and the schema.ts
definitions ``ResultType``, ``InputRequest``, ``InputRequests``,
``InputResponse``, ``InputResponses``, ``InputRequiredResult`` and
``InputResponseRequestParams``.

The modern era has no server-to-client requests. A ``tools/call``,
``resources/read`` or ``prompts/get`` that needs input from the client answers
with an :class:`InputRequiredResult` whose ``inputRequests`` hold, under keys
the server chooses, the requests it would have sent (sampling, roots,
elicitation); the client retries the original request with a new id, the
answers in ``inputResponses`` under the same keys and ``requestState`` echoed
untouched. ``InputResponseRequestParams`` is not a class here: its two fields
(``input_responses``, ``request_state``) are fields of
:class:`~trio_mcp.types.CallToolRequestParams`,
:class:`~trio_mcp.types.ReadResourceRequestParams` and
:class:`~trio_mcp.types.GetPromptRequestParams`, the three requests that may be
retried.
"""

from typing import Literal, TypeAlias

import attrs

from ._base import InputResponses, RequestParams, Result
from .elicitation import ElicitResult, ModernElicitRequestParams
from .roots import ListRootsResult
from .sampling import CreateMessageRequestParams, CreateMessageResult

__all__ = [
    "RESULT_TYPE_COMPLETE",
    "RESULT_TYPE_INPUT_REQUIRED",
    "CreateMessageInputRequest",
    "ListRootsInputRequest",
    "ElicitInputRequest",
    "InputRequest",
    "InputRequests",
    "InputResponse",
    "InputResponses",
    "InputRequiredResult",
]

#: ``resultType`` of a final result.
RESULT_TYPE_COMPLETE = "complete"
#: ``resultType`` of an :class:`InputRequiredResult`.
RESULT_TYPE_INPUT_REQUIRED = "input_required"


@attrs.frozen(kw_only=True)
class CreateMessageInputRequest:
    """A ``sampling/createMessage`` input request (schema.ts ``CreateMessageRequest``, no id)."""

    method: Literal["sampling/createMessage"] = "sampling/createMessage"
    params: CreateMessageRequestParams


@attrs.frozen(kw_only=True)
class ListRootsInputRequest:
    """A ``roots/list`` input request (schema.ts ``ListRootsRequest``, no id)."""

    method: Literal["roots/list"] = "roots/list"
    params: RequestParams | None = None


@attrs.frozen(kw_only=True)
class ElicitInputRequest:
    """An ``elicitation/create`` input request (schema.ts ``ElicitRequest``, no id)."""

    method: Literal["elicitation/create"] = "elicitation/create"
    #: Form mode, or the 2026-07-28 URL mode (no ``elicitationId``).
    params: ModernElicitRequestParams


#: One request of ``inputRequests``, told apart by its ``method``.
InputRequest: TypeAlias = CreateMessageInputRequest | ListRootsInputRequest | ElicitInputRequest
#: ``inputRequests``: server-chosen keys to the requests the client must fulfil.
InputRequests: TypeAlias = dict[str, InputRequest]
#: One answer of ``inputResponses``: the result of the matching request, told
#: apart by its required keys (``model``, ``roots``, ``action``).
InputResponse: TypeAlias = CreateMessageResult | ListRootsResult | ElicitResult


@attrs.frozen(kw_only=True)
class InputRequiredResult(Result):
    """The server needs input before it can finish (schema.ts ``InputRequiredResult``).

    At least one of ``input_requests`` and ``request_state`` is present: a
    result with only ``request_state`` asks the client to retry as is (load
    shedding).
    """

    result_type: Literal["input_required"] = "input_required"
    #: ``inputRequests``: what the client must answer before retrying.
    input_requests: InputRequests | None = None
    #: ``requestState``: opaque to the client, echoed untouched in the retry.
    request_state: str | None = None

    def __attrs_post_init__(self) -> None:
        if self.input_requests is None and self.request_state is None:
            raise ValueError("an InputRequiredResult needs inputRequests or requestState")
