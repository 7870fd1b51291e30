"""Asking the client for input, in both eras: :class:`InputRound`.

Theory of operation
-------------------
A handler asks for input through its :class:`~trio_mcp.Context`
(``ctx.elicit``, ``ctx.create_message``, ``ctx.list_roots``, or several at once
with ``ctx.request_inputs``). What happens depends on the request's revision:

* **Handshake era**: each input is a JSON-RPC request to the client (sampling,
  roots, elicitation), sent concurrently; the call returns their results.
* **2026-07-28** (PT-03): the server may not send requests. The round's
  :class:`InputRound` looks each input up among the answers it holds (the
  retry's ``inputResponses`` plus the answers of earlier rounds, carried in the
  verified ``requestState``). If every input is answered, the call returns
  them. If not, the request ends *now*: the missing inputs go out as an
  ``InputRequiredResult`` whose sealed ``requestState`` carries the answers so
  far and the handler's ``ctx.saved`` state, and the handler is unwound by its
  own scope's cancellation (``RequestContext.finish_with``). When the client
  retries (new id, same params, the answers), the handler runs again from the
  start and this time finds them.

So a modern-era handler may run more than once for one logical call. Work done
before the last input must be safe to repeat, or remembered in ``ctx.saved``
(a JSON object carried between rounds, signed but not encrypted)::

    if "order" not in ctx.saved:
        ctx.saved["order"] = await create_order()   # done once, whatever the rounds

Inputs are keyed by the order they are asked for (``elicitation-1``,
``sampling-2``, ...), so a handler must ask in the same order every time it
runs, which it does unless it branches on something other than its inputs.

An input whose capability this request did not declare is never asked for
(PT-07): the call raises -32021 with ``requiredCapabilities``. An answer that
does not fit the input's result type is -32602 (PT-16).

Cancellation: asking in the handshake era is as ``Session.request`` (the
client is told of a cancel); in the modern era a missing input never returns
(the request ends with the input-required result; ``Cancelled`` unwinds the
handler).

Spec: PT-03, PT-05, PT-06, PT-07, PT-11, PT-16, PT-17, EL-01, SM-01, RT-01.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import orjson
import trio

from .. import types as mcp_types
from .._errors import RPCError
from ..protocol import ErrorCode, JSONObject
from ._request_state import RequestStateSealer, RoundState

if TYPE_CHECKING:
    from .._session import RequestContext

logger = logging.getLogger("trio_mcp.server")

#: The requests that may ask for input in 2026-07-28 (PT-04).
MAY_ASK = frozenset({"tools/call", "resources/read", "prompts/get"})

#: What each input method is answered with, and the client capability it needs.
#: The result type is named (a name in :mod:`trio_mcp.types`): its module is
#: imported when a handler first asks, not at every server's start-up.
_INPUTS: dict[str, tuple[str, str, str]] = {
    # method: (result type, capability, key prefix)
    "elicitation/create": ("ElicitResult", "elicitation", "elicitation"),
    "sampling/createMessage": ("CreateMessageResult", "sampling", "sampling"),
    "roots/list": ("ListRootsResult", "roots", "roots"),
}


def _required_capability(method: str, params: JSONObject | None) -> JSONObject:
    """The client capability an input needs, as ``requiredCapabilities`` shows it."""
    if method == "elicitation/create":
        mode = (params or {}).get("mode", "form")
        return {"elicitation": {str(mode): {}}}
    return {_INPUTS[method][1]: {}}


def _declared(capabilities: JSONObject, method: str, params: JSONObject | None) -> bool:
    """Whether *capabilities* cover an input (EL-01: ``elicitation: {}`` means form)."""
    name = _INPUTS[method][1]
    declared = capabilities.get(name)
    if not isinstance(declared, dict):
        return False
    if method != "elicitation/create":
        return True
    mode = (params or {}).get("mode", "form")
    if mode == "form":
        return not declared or isinstance(declared.get("form"), dict)
    return isinstance(declared.get(mode), dict)


def raw_inputs(inputs: Mapping[str, tuple[str, Any]]) -> dict[str, tuple[str, JSONObject | None]]:
    """*inputs* (key -> ``(method, params)``, params typed or JSON) as JSON.

    Raises:
        ValueError: an unknown input method.
    """
    raw: dict[str, tuple[str, JSONObject | None]] = {}
    for key, (method, params) in inputs.items():
        if method not in _INPUTS:
            raise ValueError(f"not an input request method: {method!r}")
        plain = params if params is None or isinstance(params, dict) else None
        if plain is None and params is not None:
            plain = mcp_types.converter.unstructure(params)
        raw[key] = (method, plain)
    return raw


def missing_capabilities(
    capabilities: JSONObject, raw: Mapping[str, tuple[str, JSONObject | None]]
) -> RPCError | None:
    """The -32021 error (with ``requiredCapabilities``) for the inputs of *raw*
    that *capabilities* do not cover, or None if they cover all (PT-07)."""
    missing = [
        _required_capability(method, params)
        for method, params in raw.values()
        if not _declared(capabilities, method, params)
    ]
    if not missing:
        return None
    required: JSONObject = {}
    for item in missing:
        for name, value in item.items():
            required.setdefault(name, {}).update(value)
    return RPCError(
        int(ErrorCode.MISSING_REQUIRED_CLIENT_CAPABILITY),
        "This request needs client capabilities it did not declare",
        {"requiredCapabilities": required},
    )


def structure_answer(key: str, method: str, answer: Any) -> Any:
    """The client's *answer* to input *key* as its result type (PT-16).

    Raises:
        RPCError: -32602 when it does not fit.
    """
    result_type = getattr(mcp_types, _INPUTS[method][0])
    try:
        return mcp_types.converter.structure(answer, result_type)
    except Exception:
        raise RPCError(
            int(ErrorCode.INVALID_PARAMS),
            f"inputResponses[{key!r}] is not a valid {method} result",
        ) from None


class InputRound:
    """The inputs of one run of a request's handler (one round, in 2026-07-28).

    Made by the server for every request that may ask for input; a handler
    reaches it through its ``Context``. Not thread-safe.

    Args:
        request: the session-level context of the request.
        sealer: seals the next round's ``requestState``.
        state: the verified state of the round before (None on the first).
        responses: the retry's ``inputResponses``, raw.
    """

    __slots__ = ("_asked", "_request", "_sealer", "answers", "round", "saved")

    def __init__(
        self,
        request: RequestContext,
        sealer: RequestStateSealer,
        state: RoundState | None = None,
        responses: Mapping[str, Any] | None = None,
    ) -> None:
        self._request = request
        self._sealer = sealer
        #: Every answer this run can use, by input key.
        self.answers: dict[str, Any] = dict(state.answers) if state is not None else {}
        if responses:
            self.answers.update(responses)
        #: The handler's own JSON state, carried to the next round.
        self.saved: dict[str, Any] = dict(state.saved) if state is not None else {}
        #: Which round this run is (1 on the first request).
        self.round = state.round + 1 if state is not None else 1
        self._asked = 0

    def next_key(self, method: str) -> str:
        """The key of the next input asked for without one (``elicitation-1``...)."""
        self._asked += 1
        return f"{_INPUTS[method][2]}-{self._asked}"

    async def ask(self, inputs: Mapping[str, tuple[str, Any]]) -> dict[str, Any]:
        """Get every input of *inputs* (key -> ``(method, params)``); return the
        results by key (``ElicitResult``, ``CreateMessageResult``, ``ListRootsResult``).

        Raises:
            RPCError: -32021 for an input this request's client did not declare
                the capability of (PT-07), -32602 for an answer that does not
                fit (PT-16), -32603 when the state to carry is too large.
            ValueError: an unknown input method.

        Cancellation: see the module docstring.
        """
        request = self._request
        raw = raw_inputs(inputs)
        revision = request.revision
        if revision is None or revision.server_requests:
            return await self._ask_by_request(raw)
        missing = missing_capabilities(request.client_capabilities, raw)
        if missing is not None:
            raise missing
        results, pending = self.split_answered(raw)
        if not pending:
            await trio.lowlevel.checkpoint()
            return results
        await request.finish_with(self._input_required(pending))

    def split_answered(
        self, raw: Mapping[str, tuple[str, JSONObject | None]]
    ) -> tuple[dict[str, Any], JSONObject]:
        """The inputs of *raw* this round holds answers for, structured (PT-16),
        and the others as ``inputRequests`` entries (``{method, params}``) by key.

        Raises:
            RPCError: -32602 for an answer that does not fit its input.
        """
        results: dict[str, Any] = {}
        pending: JSONObject = {}
        for key, (method, params) in raw.items():
            if key in self.answers:
                results[key] = structure_answer(key, method, self.answers[key])
            else:
                entry: JSONObject = {"method": method}
                if params is not None:
                    entry["params"] = params
                pending[key] = entry
        return results, pending

    def _input_required(self, pending: JSONObject) -> JSONObject:
        request = self._request
        params = mcp_types.converter.unstructure(request.params) if request.params else None
        try:
            state = self._sealer.seal(
                request.method,
                round=self.round,
                previous_request_id=request.request_id,
                answers=self.answers,
                saved=self.saved,
                params=params,
                principal=principal_text(request),
            )
        except ValueError as exc:
            logger.error("cannot carry the state of %s to the next round: %s", request.method, exc)
            raise RPCError(
                int(ErrorCode.INTERNAL_ERROR), "Internal error: the request state is too large"
            ) from None
        return {"resultType": "input_required", "inputRequests": pending, "requestState": state}

    async def _ask_by_request(self, inputs: Mapping[str, tuple[str, Any]]) -> dict[str, Any]:
        """The handshake era: each input is a request to the client, all at once."""
        session = self._request.session
        results: dict[str, Any] = {}

        async def one(key: str, method: str, params: Any) -> None:
            results[key] = await session.request(method, params)

        if len(inputs) == 1:
            ((key, (method, params)),) = inputs.items()
            await one(key, method, params)
            return results
        async with trio.open_nursery() as nursery:
            for key, (method, params) in inputs.items():
                nursery.start_soon(one, key, method, params)
        return results


def principal_text(request: RequestContext) -> str | None:
    """The principal a ``requestState`` is bound to (PT-08): the request's
    caller's (``StreamableHTTPApp(auth=...)``: the token's
    ``(issuer, subject)``; or ``principal_of``'s), as text; None: anonymous."""
    principal = request.caller.principal
    if principal is None or isinstance(principal, str):
        return principal
    try:
        return orjson.dumps(principal).decode()
    except TypeError:
        # Not JSON (an arbitrary hashable): its repr, stable if the type's is.
        return repr(principal)


async def open_round(request: RequestContext, sealer: RequestStateSealer) -> InputRound:
    """The :class:`InputRound` of a request that may ask for input: verifies the
    retry's ``requestState`` (-32602 when tampered, expired, foreign or replayed:
    PT-08..PT-10), links the request's record to the round before, and gathers
    the answers.

    Raises:
        RequestStateError: the ``requestState`` is refused.

    Cancellation: a checkpoint only when the nonce store asks another process.
    """
    params = request.params
    token = getattr(params, "request_state", None)
    responses = getattr(params, "input_responses", None)
    raw_responses = mcp_types.converter.unstructure(responses) if responses else None
    state: RoundState | None = None
    if token is not None:
        raw = mcp_types.converter.unstructure(params)
        state = await sealer.open_async(
            token, method=request.method, params=raw, principal=principal_text(request)
        )
        if state.previous_request_id is not None:
            request.note_follows(state.previous_request_id)
    return InputRound(request, sealer, state, raw_responses)
