"""A ``tools/call`` run as a task: :class:`ToolTasks`.

Whether a call becomes a task (the tool's ``execution.taskSupport`` and what
the request asked, in each era) and, when it does, starting the tool's
handler in the server's :class:`~trio_mcp._tasks._runner.TaskRunner` with a
:class:`~trio_mcp._server._task_input.TaskInputRound`, so its input rounds
go through the task (``input_required``) instead of the request. The
``tasks/*`` methods that answer for the task afterwards are role-neutral:
:class:`~trio_mcp._tasks._methods.TaskMethods`.

Spec: TK-02..TK-05, TK-11, TK-19.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import types as mcp_types
from .._errors import RPCError
from .._tasks._methods import TaskMethods, created, request_form
from .._tasks._runner import Work, WorkEnd
from ..protocol import ErrorCode, JSONObject, TaskForm, TaskRecord
from ._input import InputRound
from ._task_input import TaskInputRound

if TYPE_CHECKING:
    from .._session import RequestContext
    from ._context import ContextServer
    from ._tools import RegisteredTool


class ToolTasks:
    """Runs a server's ``tools/call`` requests as tasks where they ask to be.

    Args:
        methods: the server's ``tasks/*`` methods: their runner runs the
            tool, and their owner of a request owns its task.

    Cancellation: see each method.
    """

    __slots__ = ("methods",)

    def __init__(self, methods: TaskMethods) -> None:
        self.methods = methods

    def mode(self, request: RequestContext, tool: RegisteredTool) -> TaskForm | None:
        """Whether this ``tools/call`` of *tool* runs as a task, and in which form.

        2026-07-28: when the tool supports tasks and this request declared the
        extension (the legacy ``task`` param is ignored); a ``required`` tool
        without it is -32021 naming the extension. 2025-11-25: when the request
        carries ``task`` and the tool supports tasks; ``task`` on a
        ``forbidden`` tool, or none on a ``required`` one, is -32601 (TK-04).
        Earlier revisions never (a ``required`` tool runs as a plain call).

        Raises:
            RPCError: -32021 or -32601 as above.

        Cancellation: synchronous.

        Spec: TK-02..TK-05, TK-19.
        """
        support = tool.task_support
        form = request_form(request)
        if form is TaskForm.EXTENSION:
            declared = request.peer_declares(mcp_types.TASKS_EXTENSION)
            if support == "required" and not declared:
                raise RPCError(
                    int(ErrorCode.MISSING_REQUIRED_CLIENT_CAPABILITY),
                    f"Tool {tool.name} runs only as a task: declare the "
                    f"{mcp_types.TASKS_EXTENSION} extension in this request's clientCapabilities",
                    {"requiredCapabilities": {"extensions": {mcp_types.TASKS_EXTENSION: {}}}},
                )
            return form if declared and support != "forbidden" else None
        revision = request.revision
        if revision is None or not revision.tasks_utility:
            return None
        asked = getattr(request.params, "task", None) is not None
        if asked and support == "forbidden":
            raise RPCError(
                int(ErrorCode.METHOD_NOT_FOUND),
                f"Tool {tool.name} does not run as a task (execution.taskSupport is forbidden)",
            )
        if not asked and support == "required":
            raise RPCError(
                int(ErrorCode.METHOD_NOT_FOUND),
                f"Tool {tool.name} runs only as a task: call it with params.task",
            )
        return form if asked else None

    async def start_tool_task(
        self,
        request: RequestContext,
        tool: RegisteredTool,
        server: ContextServer,
        form: TaskForm,
    ) -> JSONObject:
        """Start this ``tools/call`` as a task; its ``CreateTaskResult``.

        The handler runs in the runner's nursery with a :class:`TaskInputRound`
        that starts from this request's round (a deferred task finds the
        answers of the rounds before it). Its result, as this call would have
        returned it, becomes the task's.

        Raises:
            RPCError: -32603 as :meth:`TaskRunner.start`.

        Cancellation: cancelled before the runner took the task, nothing
        started; once it did, the task runs on in the runner's nursery.
        """
        runner = self.methods.runner
        owner = self.methods.owner_of(request)
        # Captured now: once the request has ended its _meta is gone.
        capabilities = dict(request.client_capabilities)
        previous = request.user_data if isinstance(request.user_data, InputRound) else None
        token = request.progress_token
        task = getattr(request.params, "task", None)
        asked_ttl = task.ttl if form is TaskForm.V2025_11_25 and task is not None else None
        arguments = request.params.arguments

        def work(record: TaskRecord) -> Work:
            async def run() -> WorkEnd:
                request.user_data = TaskInputRound(
                    request, runner, record, owner, capabilities, previous, token
                )
                result = await tool.call(request, server, arguments)
                plain = (
                    result if isinstance(result, dict) else mcp_types.converter.unstructure(result)
                )
                return WorkEnd.tool_result(form, plain)

            return run

        record = await runner.start(request, work, form=form, owner=owner, ttl_ms=asked_ttl)
        return created(record, form)
