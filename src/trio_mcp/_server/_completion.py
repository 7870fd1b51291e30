"""``completion/complete``: suggestions for prompt arguments and template variables.

A completer is registered for one prompt argument (``prompt=``) or one
resource-template variable (``template=``) and is called with the partial
``value`` and, if it has an ``arguments`` parameter, the already resolved
arguments from ``context.arguments`` (CP-03, 2025-06-18+). It returns strings
(or a ``Completion``); at most 100 values are sent, with ``total`` and
``hasMore`` saying what was cut (CP-02).

Errors (CP-04): an unknown prompt, template or argument name is -32602; a
known one without a completer gets an empty completion.

Spec: CP-01, CP-02, CP-03, CP-04.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from .. import types as mcp_types
from .._errors import RPCError
from .._session import RequestContext
from ..protocol import ErrorCode
from ._context import ContextServer
from ._prompts import unknown_prompt
from ._resources import _context_params, inject_context
from ._tools import call_function

if TYPE_CHECKING:
    from ._prompts import RegisteredPrompt
    from ._resources import RegisteredTemplate

#: The spec's cap on values per completion (CP-02).
MAX_VALUES = 100


@attrs.frozen
class Completer:
    """One registered completion function."""

    fn: Callable[..., Any]
    wants_arguments: bool
    context_params: dict[str, Any]

    @classmethod
    def from_function(cls, fn: Callable[..., Any]) -> Completer:
        """Build it.

        Raises:
            TypeError: *fn* has no ``value`` parameter.
        """
        params = inspect.signature(fn).parameters
        if "value" not in params:
            raise TypeError("a completion function takes a 'value' parameter")
        return cls(fn, "arguments" in params, _context_params(fn))

    async def complete(
        self, value: str, arguments: dict[str, str], request: RequestContext, server: ContextServer
    ) -> mcp_types.Completion:
        """Call the function and cap the result.

        Cancellation: see :func:`~trio_mcp._server._tools.call_function`.
        """
        kwargs: dict[str, Any] = {"value": value}
        if self.wants_arguments:
            kwargs["arguments"] = arguments
        ctx = inject_context(kwargs, self.context_params, request, server)
        result = await call_function(self.fn, kwargs, ctx)
        if isinstance(result, mcp_types.Completion):
            return cap(result.values, result.total, result.has_more)
        return cap(list(result), None, None)


def cap(values: list[str], total: int | None, has_more: bool | None) -> mcp_types.Completion:
    """At most :data:`MAX_VALUES` values; ``total``/``hasMore`` describe the rest."""
    if len(values) > MAX_VALUES:
        return mcp_types.Completion(
            values=values[:MAX_VALUES], total=total or len(values), has_more=True
        )
    return mcp_types.Completion(values=list(values), total=total, has_more=has_more)


async def answer_complete(
    ctx: RequestContext,
    server: ContextServer,
    prompts: Mapping[str, RegisteredPrompt],
    templates: Mapping[str, RegisteredTemplate],
    completers: Mapping[tuple[str, str, str], Completer],
    *,
    declared: bool,
) -> mcp_types.CompleteResult:
    """Answer one ``completion/complete`` from a server's registry.

    *declared*: whether the server declares ``completions``. 2024-11-05 has no
    such capability, so the protocol lets the request through and the answer
    "not supported" (-32601) is given here (CP-04).

    Raises:
        RPCError: -32601 when completions are not declared; -32602 for an
            unknown prompt, template or argument name (CP-04).

    Cancellation: see :meth:`Completer.complete`.
    """
    if not declared:
        raise RPCError(int(ErrorCode.METHOD_NOT_FOUND), "Method not found: completion/complete")
    params: mcp_types.CompleteRequestParams = ctx.params
    ref = params.ref
    argument = params.argument.name
    if isinstance(ref, mcp_types.PromptReference):
        prompt = prompts.get(ref.name)
        if prompt is None:
            raise unknown_prompt(ref.name)
        known = prompt.accepted
        key = ("ref/prompt", ref.name, argument)
    else:
        template = templates.get(ref.uri)
        if template is None:
            raise RPCError(int(ErrorCode.INVALID_PARAMS), f"Unknown resource template: {ref.uri}")
        known = frozenset(template.template.variables)
        key = ("ref/resource", ref.uri, argument)
    if argument not in known:
        raise RPCError(int(ErrorCode.INVALID_PARAMS), f"Unknown argument: {argument}")
    completer = completers.get(key)
    if completer is None:
        return mcp_types.CompleteResult(completion=mcp_types.Completion(values=[]))
    resolved = dict((params.context.arguments or {}) if params.context else {})
    completion = await completer.complete(params.argument.value, resolved, ctx, server)
    return mcp_types.CompleteResult(completion=completion)
