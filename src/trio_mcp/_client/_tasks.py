"""Tasks on the client side: :class:`TaskHandle`, and :class:`ClientTasks`, the
tasks of one client.

Theory of operation
-------------------
A tool call the server runs as a task is answered at once with the task
instead of the result; the call's request ``COMPLETED`` with it, and the
task's record continues that request's (:class:`~trio_mcp.protocol.TaskRecord`
in the client's :class:`~trio_mcp.protocol.TaskBook`, a mirror fed by every
report the server gives: the task it created, each ``tasks/get``, a
2025-11-25 status notification). Both wire forms (TK-19) are spoken:

* **2025-11-25** (handshake era): a call is augmented with ``params.task``
  only when the server declared ``capabilities.tasks.requests.tools.call``
  (TK-02, TK-03; an ``execution.taskSupport`` of the tool's does not override
  that). The answer is a ``CreateTaskResult``; ``tasks/get`` polls,
  ``tasks/result`` blocks for exactly what the call would have returned
  (TK-12), ``tasks/cancel`` leaves the task ``cancelled`` before it replies.
  Input the task needs arrives as ordinary server requests (elicitation,
  sampling) tagged with the related-task ``_meta`` (TK-09, TK-13): the
  client's handlers answer them like any other, and a poller that sees
  ``input_required`` switches to ``tasks/result``, which the spec has the
  requestor call then (TK-09).
* **2026-07-28**, the ``io.modelcontextprotocol/tasks`` extension (SEP-2663):
  negotiated per request, so a call declares the extension in its own
  ``clientCapabilities`` only when its caller allows a task (``as_task=True``,
  or the client's ``tasks=True``), and so does every ``tasks/*`` request (a
  server refuses one that does not, -32021). The server alone decides whether
  the call becomes a task (``resultType: "task"``) or is answered at once.
  ``tasks/get`` carries everything: the inputs the task waits for (answered
  with the client's handlers, then sent with ``tasks/update``), the result
  once ``completed`` (a tool error too, ``isError``), the error once
  ``failed``. ``tasks/cancel`` is only an ask; the task settles later.

Polling (TK-14) honours the task's poll interval (``pollInterval`` /
``pollIntervalMs``; :data:`DEFAULT_POLL_INTERVAL` when it names none) and goes
on until the task is terminal, whatever status notifications say: a
notification only ends the current pause early (they are used when they
come, never relied on).

Spec: TK-02, TK-03, TK-09, TK-10, TK-12, TK-13, TK-14, TK-16, TK-19.
"""

from __future__ import annotations

import logging
import time
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

import trio

from .. import types as mcp_types
from .._errors import InvalidPeerResult, MCPError, RPCError
from .._session import Session
from ..protocol import (
    Capability,
    Direction,
    ErrorCode,
    ErrorObject,
    JSONObject,
    LocalProtocolError,
    Progress,
    RequestId,
    RequestRecord,
    RequestState,
    Role,
    TaskBook,
    TaskCause,
    TaskEvent,
    TaskForm,
    TaskRecord,
    TaskReport,
    TaskState,
    apply_task_event,
    parse_iso8601,
    start_task,
)
from ._cache import fetch_all

logger = logging.getLogger("trio_mcp.client")

#: Seconds between polls of a task that suggests no interval.
DEFAULT_POLL_INTERVAL = 1.0
#: The shortest pause between polls, whatever the task suggests (a server's
#: ``0`` must not become a busy loop).
MIN_POLL_INTERVAL = 0.01
#: Seconds the ``tasks/cancel`` of an abandoned :meth:`Client.call_tool` may take
#: (shielded: it runs while the caller is being cancelled).
CANCEL_BOUND = 5.0

#: Answers one round of input requests with the client's handlers (by key).
AnswerInputs = Callable[[mcp_types.InputRequests], Awaitable[dict[str, Any]]]
#: Called with every new status a poll sees.
StatusCallback = Callable[[TaskRecord], None]

_TOOLS_CALL = Capability(Role.SERVER, ("tasks", "requests", "tools", "call"))
_TASKS_LIST = Capability(Role.SERVER, ("tasks", "list"))


def _report(task: Any) -> TaskReport:
    """A :class:`TaskReport` of a task as either form types it: the extension's
    :class:`~trio_mcp.types.DetailedTask`, or 2025-11-25's ``Task`` (or a
    result or notification with its fields)."""
    if isinstance(task, mcp_types.DetailedTask):
        ttl, poll = task.ttl_ms, task.poll_interval_ms
        inputs = task.input_requests
        result, error = task.result, task.error
    else:
        ttl, poll = task.ttl, task.poll_interval
        inputs = result = error = None
    return TaskReport(
        task_id=task.task_id,
        state=TaskState(task.status),
        ttl_ms=ttl,
        created_at=parse_iso8601(task.created_at),
        last_updated_at=parse_iso8601(task.last_updated_at),
        poll_interval_ms=poll,
        status_message=task.status_message,
        result=result,
        error=error,
        input_requests=mcp_types.converter.unstructure(inputs) if inputs else None,
    )


def _error_of(error: JSONObject) -> RPCError:
    """The exception the call would have raised for a task's JSON-RPC *error*."""
    code = error.get("code")
    message = error.get("message")
    return RPCError.from_error(
        ErrorObject(
            code if isinstance(code, int) and not isinstance(code, bool) else -32603,
            message if isinstance(message, str) else "Internal error",
            error.get("data"),
        )
    )


class ClientTasks:
    """The tasks of one client: which form the server offers, the mirror book,
    and the calls that augment, adopt and poll (see the module docstring).

    Args:
        session: the client's session.
        answer_inputs: the client's answerer of input requests (the same that
            answers input-required rounds).
        declare: 2026-07-28: declare the extension on every tool call, so any
            call may be answered with a task (the client's ``tasks=True``).
        max_pages: bound on the pages of ``tasks/list``.

    Owned by the :class:`~trio_mcp.Client`; nothing here blocks but the
    requests, and nothing outlives the session.
    """

    __slots__ = ("_answer_inputs", "_handles", "book", "declare", "max_pages", "session")

    def __init__(
        self,
        session: Session,
        answer_inputs: AnswerInputs,
        *,
        declare: bool = False,
        max_pages: int = 1000,
    ) -> None:
        self.session = session
        self._answer_inputs = answer_inputs
        self.declare = declare
        self.max_pages = max_pages
        #: The mirror: a record per task a live handle holds (TK-08, TK-14).
        self.book = TaskBook(clock=time.time)
        self._handles: weakref.WeakValueDictionary[str, TaskHandle] = weakref.WeakValueDictionary()

    # ------------------------------------------------------------ the form

    @property
    def form(self) -> TaskForm | None:
        """The form the server offers tool-call tasks in; None: it offers none
        (2025-11-25: ``tasks.requests.tools.call`` not declared, TK-02, TK-03;
        2026-07-28: the extension absent from ``server/discover``)."""
        protocol = self.session.protocol
        revision = protocol.revision
        caps = protocol.peer_capabilities
        if revision is None:
            return None
        if revision.tasks_utility:
            return TaskForm.V2025_11_25 if _TOOLS_CALL.declared_in(caps) else None
        extensions = caps.get("extensions")
        if (
            revision.result_type
            and isinstance(extensions, dict)
            and isinstance(extensions.get(mcp_types.TASKS_EXTENSION), dict)
        ):
            return TaskForm.EXTENSION
        return None

    def declared_meta(self) -> JSONObject:
        """2026-07-28: the ``_meta`` of a request that declares the extension:
        our capabilities with it added (the connection's defaults lose to the
        request's own keys, so this replaces them for that request only)."""
        local = self.session.protocol.local_capabilities
        extensions = {**(local.get("extensions") or {}), mcp_types.TASKS_EXTENSION: {}}
        return {mcp_types.CLIENT_CAPABILITIES_META_KEY: {**local, "extensions": extensions}}

    def augment(
        self,
        params: dict[str, Any],
        *,
        as_task: bool,
        ttl: int | None,
        tool: mcp_types.Tool | None,
    ) -> dict[str, Any] | None:
        """The params of a ``tools/call`` that may become a task, or None for a
        plain call.

        2025-11-25: with ``task`` (and *ttl*, if given) when *as_task* or the
        cached *tool* says ``taskSupport: "required"``, and only to a server that
        declared ``tasks.requests.tools.call`` (TK-02, TK-03). 2026-07-28: with
        the extension declared in ``_meta`` when *as_task* or the client's
        ``tasks=True`` (the extension has no ttl hint: *ttl* is not sent).

        Raises:
            LocalProtocolError: *as_task* to a server that offers no tasks, or
                (2025-11-25) for a listed tool whose ``taskSupport`` is
                ``forbidden`` or absent (TK-04).
        """
        form = self.form
        if form is None:
            if as_task:
                raise LocalProtocolError(
                    "the server offers no tool-call tasks (2025-11-25: no "
                    "capabilities.tasks.requests.tools.call; 2026-07-28: no "
                    f"{mcp_types.TASKS_EXTENSION} extension): call the tool without as_task"
                )
            return None
        if form is TaskForm.V2025_11_25:
            execution = tool.execution if tool is not None else None
            support = execution.task_support if execution is not None else None
            required = support == "required"
            if as_task and tool is not None and support in (None, "forbidden"):
                # TK-04: a tool whose definition does not allow tasks must not
                # be called as one (a tool not listed yet is left to the
                # server, which answers -32601).
                raise LocalProtocolError(
                    f"tool {tool.name!r} does not run as a task (its execution.taskSupport"
                    f" is {support or 'absent'}): call it without as_task"
                )
            if not (as_task or required):
                return None
            return {**params, "task": {} if ttl is None else {"ttl": ttl}}
        if not (as_task or self.declare):
            return None
        return {**params, "_meta": self.declared_meta()}

    def required_retry(self, params: dict[str, Any], error: RPCError) -> dict[str, Any] | None:
        """The params to call a 2026-07-28 tool again with, declaring the tasks
        extension, when *error* is the server's -32021 saying the call needs it
        (a tool that runs only as a task: its definition cannot say so in
        2026-07-28); None for any other error, or where the extension is not
        the form (TK-19).
        """
        if self.form is not TaskForm.EXTENSION or error.code != int(
            ErrorCode.MISSING_REQUIRED_CLIENT_CAPABILITY
        ):
            return None
        data = error.data if isinstance(error.data, dict) else {}
        required = data.get("requiredCapabilities")
        if not isinstance(required, dict) or set(required) != {"extensions"}:
            return None  # it needs something else too (sampling, ...): not ours to add
        extensions = required["extensions"]
        if not isinstance(extensions, dict):
            return None
        if set(extensions) != {mcp_types.TASKS_EXTENSION}:
            return None
        return {**params, "_meta": self.declared_meta()}

    # ------------------------------------------------------- after the call

    def adopt(self, request_id: RequestId, task: Any, *, tool: str) -> TaskHandle:
        """A handle on the task the call *request_id* was answered with: a
        2025-11-25 ``CreateTaskResult`` or the extension's
        :class:`~trio_mcp.types.DetailedTask`. Its record continues the call's."""
        form = TaskForm.EXTENSION
        if isinstance(task, mcp_types.CreateTaskResult):
            task, form = task.task, TaskForm.V2025_11_25
        report = _report(task)
        existing = self._handles.get(report.task_id)
        if existing is not None:
            # A server answering two calls with one task: one task, one handle.
            self.book.receive(report)
            return existing
        self.book.forget(report.task_id)  # a dropped handle's, not yet collected
        self.book.adopt(self._call_record(request_id), report, form=form)
        handle = TaskHandle(self, report.task_id, tool, form)
        self._handles[report.task_id] = handle
        weakref.finalize(handle, self._forget, report.task_id)
        return handle

    def immediate(
        self, request_id: RequestId, result: mcp_types.CallToolResult, *, tool: str
    ) -> TaskHandle:
        """A handle for a call the caller allowed to be a task but the server
        answered at once (the extension lets it, SEP-2663): already
        ``completed``, ``task_id`` empty, nothing ever sent for it."""
        now = time.time()
        form = self.form or TaskForm.EXTENSION
        record = start_task(self._call_record(request_id), "", now, form=form, ttl_ms=None)
        record = apply_task_event(record, TaskEvent.COMPLETE, now, TaskCause.REPORTED)
        return TaskHandle.answered_at_once(self, tool, form, record, result)

    def _call_record(self, request_id: RequestId) -> RequestRecord:
        """The record of the call a task answered (``COMPLETED``): the
        session's, or, once it has left the bounded history, a stand-in."""
        record = self.session.protocol.record(Direction.OUTBOUND, request_id)
        if record is not None and record.state is RequestState.COMPLETED:
            return record
        return RequestRecord(
            id=request_id,
            method="tools/call",
            direction=Direction.OUTBOUND,
            state=RequestState.COMPLETED,
            queued_at=trio.current_time(),
        )

    def _forget(self, task_id: str) -> None:
        if task_id not in self._handles:
            self.book.forget(task_id)

    def notified(self, params: mcp_types.TaskStatusNotificationParams) -> None:
        """2025-11-25 ``notifications/tasks/status``: mirror it and wake the
        poller of that task (TK-14: used when sent, never waited for)."""
        handle = self._handles.get(params.task_id)
        if handle is None or self.book.get(params.task_id) is None:
            logger.debug("status of a task we hold no handle on: %s", params.task_id)
            return
        try:
            report = _report(params)
        except ValueError:
            logger.debug("status notification with an unknown status: %s", params.status)
            return
        self.book.receive(report)
        handle._nudge()

    def progressed(self, params: mcp_types.ProgressNotificationParams) -> None:
        """2025-11-25: progress of a task (its request's token, tagged with the
        task, TK-13): to the handle's :attr:`TaskHandle.on_progress`."""
        meta = params.meta or {}
        related = meta.get(mcp_types.RELATED_TASK_META_KEY)
        task_id = related.get("taskId") if isinstance(related, dict) else None
        handle = self._handles.get(task_id) if isinstance(task_id, str) else None
        if handle is None or handle.on_progress is None:
            logger.debug("progress of a task we do not follow: %s", task_id)
            return
        handle.on_progress(Progress(params.progress, params.total, params.message))

    # ------------------------------------------------------------ requests

    async def request(
        self, method: str, task_id: str, *, blocking: bool = False, **fields: Any
    ) -> Any:
        """One ``tasks/*`` request about *task_id* (the extension declared in
        its ``_meta`` in 2026-07-28). *blocking* (``tasks/result``): no request
        timeout, since it answers when the task ends.

        Raises / Cancellation: as :meth:`Session.request`.
        """
        params: dict[str, Any] = {"taskId": task_id, **fields}
        revision = self.session.protocol.revision
        if revision is not None and not revision.tasks_utility and revision.result_type:
            params["_meta"] = self.declared_meta()
        if blocking:
            return await self.session.request(
                method, params, progress_idle_timeout=None, max_duration=None
            )
        return await self.session.request(method, params)

    async def answer(self, requests: mcp_types.InputRequests) -> dict[str, Any]:
        """Answer input requests with the client's handlers (by key).

        Cancellation: the handlers are cancelled; nothing is sent.
        """
        return await self._answer_inputs(requests)

    async def list(self) -> list[mcp_types.Task]:
        """2025-11-25 ``tasks/list``, every page (TK-15).

        Raises:
            LocalProtocolError: the server did not declare ``tasks.list``, or
                this is a 2026-07-28 session (the extension has no list).

        Cancellation: as the requests; a partial list is discarded.
        """
        revision = self.session.protocol.revision
        if revision is None or not revision.tasks_utility:
            raise LocalProtocolError(
                "tasks/list exists only in 2025-11-25 (the 2026-07-28 tasks extension has none)"
            )
        if not _TASKS_LIST.declared_in(self.session.protocol.peer_capabilities):
            raise LocalProtocolError("the server does not offer tasks/list (no tasks.list)")
        tasks: list[mcp_types.Task] = await fetch_all(
            self.session.request, "tasks/list", "tasks", max_pages=self.max_pages
        )
        return tasks


class TaskHandle:
    """A task the server runs for one of our tool calls. Made by
    :meth:`Client.call_tool` with ``as_task=True``, not directly.

    :attr:`record` is the latest mirrored :class:`~trio_mcp.protocol.TaskRecord`
    (no I/O); :meth:`status` asks the server, :meth:`wait` polls until the end,
    :meth:`result` gives what the call would have returned, :meth:`cancel`
    asks the server to stop. Dropping the handle does not cancel the task.

    A 2026-07-28 server may answer a call at once even when it could have made
    a task (SEP-2663): the handle is then already ``completed``, its
    :attr:`task_id` is ``""`` and :attr:`immediate` is true; nothing is sent
    for it.
    """

    __slots__ = (
        "__weakref__",
        "_answered",
        "_changed",
        "_outcome",
        "_settled",
        "_task_id",
        "_tasks",
        "form",
        "on_progress",
        "tool",
    )

    def __init__(
        self,
        tasks: ClientTasks,
        task_id: str,
        tool: str,
        form: TaskForm,
        *,
        settled: TaskRecord | None = None,
    ) -> None:
        self._tasks = tasks
        self._task_id = task_id
        #: The tool whose call this task runs.
        self.tool = tool
        #: The wire form the task speaks: 2025-11-25 tasks, or the 2026-07-28 extension.
        #:
        #: Spec: TK-19.
        self.form = form
        self._settled = settled
        #: Called with each :class:`~trio_mcp.lowlevel.Progress` the server
        #: reports for the task (2025-11-25: its request's token outlives the
        #: request; the extension reports none). ``call_tool(on_progress=)``
        #: sets it; set it yourself for a handle you hold.
        self.on_progress: Callable[[Progress], None] | None = None
        # Extension input keys answered already: a key is never answered twice
        # (tasks/update is eventually consistent; a poll may show it again).
        self._answered: set[str] = set()
        self._changed = trio.Event()
        # What the call returned (a CallToolResult) or raised (an RPCError),
        # once known.
        self._outcome: mcp_types.CallToolResult | RPCError | None = None

    @classmethod
    def answered_at_once(
        cls,
        tasks: ClientTasks,
        tool: str,
        form: TaskForm,
        settled: TaskRecord,
        result: mcp_types.CallToolResult,
    ) -> TaskHandle:
        """A handle on a call the server answered at once instead of making a
        task: settled as *settled*, with *result* as its outcome (see
        :attr:`immediate`)."""
        handle = cls(tasks, "", tool, form, settled=settled)
        handle._outcome = result
        return handle

    def __repr__(self) -> str:
        return f"<TaskHandle {self._task_id!r} of {self.tool!r}: {self.record.state.value}>"

    @property
    def task_id(self) -> str:
        """The server's id of the task (``""`` for an :attr:`immediate` answer)."""
        return self._task_id

    @property
    def immediate(self) -> bool:
        """Whether the server answered at once instead of creating a task."""
        return self._settled is not None

    @property
    def record(self) -> TaskRecord:
        """The task as last reported (no I/O)."""
        if self._settled is not None:
            return self._settled
        record = self._tasks.book.get(self._task_id)
        assert record is not None  # the book keeps it while this handle lives
        return record

    @property
    def state(self) -> TaskState:
        """The task's state as last reported."""
        return self.record.state

    def _nudge(self) -> None:
        """A status notification came: end the current pause early."""
        self._changed.set()
        self._changed = trio.Event()

    # ------------------------------------------------------------ requests

    async def status(self) -> TaskRecord:
        """Ask the server for the task now (``tasks/get``) and mirror its answer.

        Raises:
            RPCError: -32602 for a task the server no longer knows (expired,
                deleted) and as :meth:`Session.request`.

        Cancellation: as :meth:`Session.request`; the mirror is unchanged and
        the task is not touched.

        Spec: TK-10, TK-14, TK-19.
        """
        if self._settled is not None:
            await trio.lowlevel.checkpoint()
            return self._settled
        reported = await self._tasks.request("tasks/get", self._task_id)
        report = _report(reported)
        if report.task_id != self._task_id:
            raise InvalidPeerResult(
                "tasks/get answered about another task",
                [f"taskId {report.task_id!r}, asked for {self._task_id!r}"],
            )
        return self._tasks.book.receive(report)

    async def wait(self, *, on_status: StatusCallback | None = None) -> TaskRecord:
        """Poll until the task is terminal; its final record.

        Between polls it pauses for the task's poll interval (ended early by a status
        notification, never waiting for one). While the task is ``input_required``:
        2026-07-28, the inputs it waits for are answered with the client's handlers and
        sent with ``tasks/update`` (each key once); 2025-11-25, the server asks for them
        with ordinary requests, which the handlers answer, and this calls
        ``tasks/result`` meanwhile (its outcome is kept for :meth:`result`). *on_status*
        is called with every new status seen.

        Raises:
            RPCError: as :meth:`status`.
            InvalidPeerResult: the task asks for an input this client cannot
                answer (no handler for it); the task is left as it is.

        Cancellation: cancelling the wait stops polling and **never cancels
        the task**: it runs on, and :meth:`status`, :meth:`wait`,
        :meth:`result` and :meth:`cancel` still work. A ``tasks/get`` in
        flight is abandoned as :meth:`Session.request` says.

        Spec: TK-09, TK-10, TK-14, TK-19.
        """
        record = self.record
        seen = len(record.moves)
        if record.is_terminal:
            await trio.lowlevel.checkpoint()
        while not record.is_terminal:
            if record.state is TaskState.INPUT_REQUIRED and self.form is TaskForm.EXTENSION:
                if not await self._give_inputs(record):
                    await self._pause(record)
            elif record.state is TaskState.INPUT_REQUIRED and self._outcome is None:
                await self._fetch_result()
            else:
                await self._pause(record)
            record = await self.status()
            if on_status is not None and len(record.moves) != seen:
                seen = len(record.moves)
                on_status(record)
        return record

    async def result(self) -> mcp_types.CallToolResult:
        """What the tool call would have returned, once the task has ended.

        2025-11-25: ``tasks/result``, which blocks until the task ends; a task that
        failed with a tool error (``isError``) returns that result. 2026-07-28:
        :meth:`wait`, then the result inline in the last ``tasks/get``; a tool error is
        a ``completed`` task with ``isError``.

        Raises:
            RPCError: the error the call would have raised, for a task that
                failed with one (the same code, message and data). A cancelled
                task has no result: -32602 (2025-11-25: from the server).
            InvalidPeerResult: the result is not a ``CallToolResult``.

        Cancellation: stops waiting; the task is not touched (see :meth:`wait`).

        Spec: TK-12, TK-19.
        """
        if self._outcome is None:
            if self.form is TaskForm.V2025_11_25:
                await self._fetch_result()
            else:
                self._outcome = self._inline_outcome(await self.wait())
        else:
            await trio.lowlevel.checkpoint()
        outcome = self._outcome
        assert outcome is not None
        if isinstance(outcome, RPCError):
            # A fresh exception each time, the same as the call's would be.
            raise RPCError.from_error(outcome.to_error())
        return outcome

    async def cancel(self) -> TaskRecord:
        """Ask the server to cancel the task (``tasks/cancel``); the record after.

        2025-11-25: the task is ``cancelled`` when this returns. The extension's is
        cooperative: the ask is acknowledged and recorded (``record.cancel_requested``);
        the task settles later, possibly ``completed`` if its work won the race
        (:meth:`wait` tells). A task that had already ended is returned as it is.

        Raises:
            RPCError: -32602 for a task the server no longer knows, and as
                :meth:`Session.request`.

        Cancellation: as :meth:`Session.request`: cancelled before the server
        answered, the ask may or may not have reached it.

        Spec: TK-16, TK-19.
        """
        book = self._tasks.book
        if self._settled is not None or self.record.is_terminal:
            await trio.lowlevel.checkpoint()
            return self.record
        book.request_cancel(self._task_id, TaskCause.REQUESTOR, "tasks/cancel")
        try:
            reported = await self._tasks.request("tasks/cancel", self._task_id)
        except RPCError as exc:
            if self.form is not TaskForm.V2025_11_25 or exc.code != -32602:
                raise
            # 2025-11-25 refuses to cancel a task that has just ended: look.
            record = await self.status()
            if not record.is_terminal:
                raise
            return record
        if self.form is TaskForm.V2025_11_25:
            return book.receive(_report(reported))
        return self.record

    # ------------------------------------------------------------- helpers

    async def _pause(self, record: TaskRecord) -> None:
        """Sleep the task's poll interval, or until a status notification."""
        interval = (
            DEFAULT_POLL_INTERVAL
            if record.poll_interval_ms is None
            else max(MIN_POLL_INTERVAL, record.poll_interval_ms / 1000)
        )
        changed = self._changed
        with trio.move_on_after(interval):
            await changed.wait()

    async def _give_inputs(self, record: TaskRecord) -> bool:
        """The extension's ``input_required``: answer the keys not answered yet
        and send them with ``tasks/update``; whether there were any."""
        pending = {
            key: value
            for key, value in (record.input_requests or {}).items()
            if key not in self._answered
        }
        if not pending:
            return False
        try:
            requests: mcp_types.InputRequests = mcp_types.converter.structure(
                pending, mcp_types.InputRequests
            )
        except Exception as exc:
            raise InvalidPeerResult(
                f"task {self._task_id!r} asks for an input this client cannot read",
                [str(exc).splitlines()[0]],
            ) from None
        answers = await self._tasks.answer(requests)
        await self._tasks.request("tasks/update", self._task_id, inputResponses=answers)
        self._answered.update(answers)
        return True

    async def _fetch_result(self) -> None:
        """2025-11-25 ``tasks/result``: keep what the call would have returned
        (its result, or its error)."""
        try:
            payload: mcp_types.GetTaskPayloadResult = await self._tasks.request(
                "tasks/result", self._task_id, blocking=True
            )
        except RPCError as exc:
            self._outcome = exc
            return
        self._outcome = _call_result(self._task_id, payload.payload)

    def _inline_outcome(self, record: TaskRecord) -> mcp_types.CallToolResult | RPCError:
        """The extension's terminal task as the call's outcome."""
        if record.state is TaskState.COMPLETED and record.result is not None:
            return _call_result(self._task_id, record.result)
        if record.state is TaskState.FAILED and record.error is not None:
            return _error_of(record.error)
        return RPCError(
            -32602,
            f"Task {self._task_id!r} was {record.state.value}: it has no result",
            {"taskId": self._task_id, "status": record.state.value},
        )


def _call_result(task_id: str, payload: JSONObject) -> mcp_types.CallToolResult:
    try:
        result: mcp_types.CallToolResult = mcp_types.converter.structure(
            payload, mcp_types.CallToolResult
        )
    except Exception as exc:
        raise InvalidPeerResult(
            f"the result of task {task_id!r} is not a tool result",
            [str(exc).splitlines()[0]],
        ) from None
    return result


async def settle(handle: TaskHandle) -> mcp_types.CallToolResult:
    """What :meth:`Client.call_tool` does with a task it did not ask to hold:
    poll it to the end, then its result, as a plain call would have returned.

    Raises: as :meth:`TaskHandle.wait` and :meth:`TaskHandle.result`.

    Cancellation: cancelled (or failing) before the task ended, the task is
    cancelled (``tasks/cancel``, shielded, bounded by :data:`CANCEL_BOUND`
    seconds; skipped if the session is closed).
    """
    try:
        await handle.wait()
        return await handle.result()
    except BaseException:
        if not handle.record.is_terminal and not handle._tasks.session.closed:
            with trio.CancelScope(shield=True) as scope:
                scope.deadline = trio.current_time() + CANCEL_BOUND
                try:
                    await handle.cancel()
                except MCPError as exc:
                    logger.debug(
                        "tasks/cancel of abandoned task %s failed: %s", handle.task_id, exc
                    )
        raise
