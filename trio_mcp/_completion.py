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
from collections.abc import Callable
from typing import Any

import attrs

from . import types as mcp_types
from ._context import RequestContext
from ._resources import _context_params, inject_context
from ._tools import call_function

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
        self, value: str, arguments: dict[str, str], request: RequestContext, server: Any
    ) -> mcp_types.Completion:
        """Call the function and cap the result.

        Cancellation: see :func:`~trio_mcp._tools.call_function`.
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
