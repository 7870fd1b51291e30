"""Asking the client as a task (2025-11-25): :func:`ask_as_task`.

Tasks go both ways in 2025-11-25: a client that declared
``tasks.requests.sampling.createMessage`` (or ``...elicitation.create``) may
be sent those requests with ``task``; it answers at once with a
``CreateTaskResult`` and the server polls ``tasks/get`` at the task's
``pollInterval`` until it is terminal (TK-14; status notifications are never
waited for), then reads ``tasks/result``: exactly what the request would have
returned, or its error (TK-12). To a client that did not declare it the
request goes plain (TK-02). This is what ``ctx.create_message(...,
as_task=True)`` and ``ctx.elicit(..., as_task=True)`` do.

Cancellation: cancelled while the task runs, the task is cancelled
(``tasks/cancel``, shielded and bounded by :data:`CANCEL_BOUND`), then
``Cancelled`` goes on; before the task exists, as any request (the client is
told with ``notifications/cancelled``).

Spec: TK-02, TK-11, TK-12, TK-14, TK-16.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import trio

from .. import types as mcp_types
from .._errors import MCPError
from ..protocol import Capability, Role

if TYPE_CHECKING:
    from .._session import Session

logger = logging.getLogger("trio_mcp.server.tasks")

#: Seconds the cancel of an abandoned client task may take (shielded).
CANCEL_BOUND = 5.0
#: Seconds between polls when the task suggests none, and the least ever waited.
DEFAULT_POLL = 1.0
MIN_POLL = 0.01
_TERMINAL = frozenset({"completed", "failed", "cancelled"})
_DECLARED = {
    "sampling/createMessage": Capability(
        Role.CLIENT, ("tasks", "requests", "sampling", "createMessage")
    ),
    "elicitation/create": Capability(Role.CLIENT, ("tasks", "requests", "elicitation", "create")),
}


async def ask_as_task(session: Session, method: str, params: Any, result_type: type) -> Any:
    """Send *method* (``sampling/createMessage`` or ``elicitation/create``) to
    the client as a task and return its result as *result_type* (see the
    module docstring); a plain request where the client declared no such task.

    Raises:
        RPCError: the request's own error (from ``tasks/result``), or as
            :meth:`Session.request`.

    Cancellation: see the module docstring.
    """
    revision = session.protocol.revision
    declared = _DECLARED[method].declared_in(session.protocol.peer_capabilities)
    raw = params if isinstance(params, dict) else mcp_types.converter.unstructure(params)
    if revision is None or not revision.tasks_utility or not declared:
        return await session.request(method, raw)
    answer = await session.request(method, {**raw, "task": {}})
    if not isinstance(answer, mcp_types.CreateTaskResult):
        return answer  # the client answered as usual (TK-05)
    task: mcp_types.Task = answer.task
    try:
        while task.status not in _TERMINAL:
            interval = task.poll_interval / 1000 if task.poll_interval else DEFAULT_POLL
            await trio.sleep(max(MIN_POLL, interval))
            task = await session.request("tasks/get", {"taskId": task.task_id})
        payload: mcp_types.GetTaskPayloadResult = await session.request(
            "tasks/result", {"taskId": task.task_id}
        )
    except BaseException:
        if task.status not in _TERMINAL and not session.closed:
            with trio.CancelScope(shield=True) as bound:
                bound.deadline = trio.current_time() + CANCEL_BOUND
                try:
                    await session.request("tasks/cancel", {"taskId": task.task_id})
                except MCPError as exc:
                    logger.debug("cancelling client task %s: %s", task.task_id, exc)
        raise
    return mcp_types.converter.structure(payload.payload, result_type)
