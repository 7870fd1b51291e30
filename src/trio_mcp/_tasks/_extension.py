"""The tasks extension, ``io.modelcontextprotocol/tasks``, as an
:class:`~trio_mcp.extensions.Extension`: how a server installs the ``tasks/*``
methods (:class:`~trio_mcp._tasks._methods.TaskMethods`), through the same
public point as any other extension.

In 2026-07-28 it is declared in ``capabilities.extensions`` while a tool may
run as a task; in the handshake era the 2025-11-25 utility's ``tasks``
capability stands for it (the server's capabilities say so), so it is not
declared in ``initialize``. Its requests are refused -32021 by the connection
when a 2026-07-28 request did not declare it (the rows of ``tasks/get``,
``tasks/cancel`` and ``tasks/update`` name the extension), before they reach
it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from .. import types as mcp_types
from .._extensions._registry import Extension
from .._session import RequestContext
from ._methods import TaskMethods


def tasks_extension(
    methods: TaskMethods,
    *,
    declared_if: Callable[[], bool],
    only: Collection[str] | None = None,
) -> Extension:
    """The extension whose methods *methods* answers (both wire forms),
    declared in 2026-07-28 while *declared_if* says so; *only*: just these
    of its methods (a 2025-11-25 client answers ``tasks/get``,
    ``tasks/result`` and ``tasks/cancel`` for the tasks its server made)."""
    extension = Extension(mcp_types.TASKS_EXTENSION, declared_if=declared_if, in_handshake=False)
    for method, answer in methods.handlers().items():
        if only is None or method in only:
            extension.add_request(method, _answering(answer))
    return extension


def _answering(answer: Callable[[RequestContext], Any]) -> Callable[[Any, RequestContext], Any]:
    """A handler of the extension's form (params, ctx) for a ``TaskMethods``
    method, which reads its params from the context."""

    def handler(params: Any, ctx: RequestContext) -> Any:
        return answer(ctx)

    handler.__qualname__ = getattr(answer, "__qualname__", "tasks")
    return handler
