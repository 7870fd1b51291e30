"""Asking for input inside a task: :class:`TaskInputRound` (TK-09, TK-13, TK-19).

A handler running as a task asks through its ``Context`` exactly as in a
request; its round is this one. In the 2025-11-25 form each input is a request
to the client tagged with the related-task ``_meta``, the task
``INPUT_REQUIRED`` while they are out (:meth:`TaskRunner.note_input`). In the
extension form the inputs go into the task's record and the work waits for
``tasks/update`` to answer them (:meth:`TaskRunner.await_inputs`). Nothing is
re-run: the handler's coroutine simply resumes. The round also carries what
the task's messages need from the request that started it, captured while it
was in flight: the client's capabilities and the progress token.

Cancellation: every ask is cancellable while its inputs are out (the task's
own scope: ``tasks/cancel``, its ttl, the server's shutdown).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import trio

from .. import types as mcp_types
from .._errors import SessionClosed
from .._tasks._store import Owner
from ..protocol import JSONObject, LocalProtocolError, TaskForm, TaskRecord
from ._input import InputRound, missing_capabilities, raw_inputs, structure_answer

if TYPE_CHECKING:
    from .._session import RequestContext
    from .._tasks._runner import TaskRunner

logger = logging.getLogger("trio_mcp.server.tasks")


class TaskInputRound(InputRound):
    """The input round of a handler running as a task (see the module docstring).

    It starts with the answers and saved state of the request's last round (a
    handler that asked through input-required rounds before it became a task
    finds those answers again), and asks for anything else through the task.
    """

    __slots__ = (
        "_capabilities",
        "_form",
        "_last_progress",
        "_owner",
        "_runner",
        "_task_id",
        "progress_token",
    )

    def __init__(
        self,
        request: RequestContext,
        runner: TaskRunner,
        record: TaskRecord,
        owner: Owner,
        capabilities: JSONObject,
        previous: InputRound | None = None,
        progress_token: str | int | None = None,
    ) -> None:
        super().__init__(request, _NEVER_SEALS)
        #: The request's progress token, kept for the task's life (TK-13).
        self.progress_token = progress_token
        if previous is not None:
            self.answers.update(previous.answers)
            self.saved.update(previous.saved)
            self.round = previous.round
        self._runner = runner
        self._task_id = record.task_id
        self._form = record.form
        self._owner = owner
        self._capabilities = capabilities
        self._last_progress = float("-inf")

    async def ask(self, inputs: Mapping[str, tuple[str, Any]]) -> dict[str, Any]:
        """Get every input of *inputs*; see :meth:`InputRound.ask`.

        Raises:
            RPCError: -32021 for an input whose capability the request did not
                declare (PT-07), -32602 for an answer that does not fit (PT-16).

        Cancellation: cancellable while the inputs are out (the task's scope).
        """
        raw = raw_inputs(inputs)
        if self._form is TaskForm.V2025_11_25:
            return await self._ask_2025(raw)
        missing = missing_capabilities(self._capabilities, raw)
        if missing is not None:
            raise missing
        results, pending = self.split_answered(raw)
        if pending:
            answers = await self._runner.await_inputs(self._task_id, self._owner, pending)
            for key, answer in answers.items():
                method = pending[key]["method"]
                results[key] = structure_answer(key, method, answer)
                self.answers[key] = answer
        else:
            await trio.lowlevel.checkpoint()
        return results

    @property
    def task_id(self) -> str:
        return self._task_id

    @property
    def related(self) -> JSONObject | None:
        """The related-task ``_meta`` every message of a 2025-11-25 task carries
        (TK-13); None for an extension task, whose messages are not sent."""
        if self._form is not TaskForm.V2025_11_25:
            return None
        return {mcp_types.RELATED_TASK_META_KEY: {"taskId": self._task_id}}

    async def report_progress(
        self, progress: float, total: float | None, message: str | None
    ) -> None:
        """Progress of the task's work: a 2025-11-25 task keeps its request's
        progress token for its whole life and reports on its session, tagged
        with the task (TK-13); an extension task sends none (SEP-2663: tasks
        carry no progress). Nothing is sent without a token, once the session
        is gone, or for a value not above the last (PG-04).

        Cancellation: a checkpoint; cancelled while queued, nothing is sent.
        """
        token = self.progress_token
        related = self.related
        if token is None or related is None or progress <= self._last_progress:
            await trio.lowlevel.checkpoint()
            return
        self._last_progress = progress
        try:
            await self._request.session.notify_task_progress(
                token, progress, total, message, meta=related
            )
        except (SessionClosed, LocalProtocolError) as exc:
            logger.debug("progress of task %s not sent: %s", self._task_id, exc)

    async def _ask_2025(self, raw: Mapping[str, tuple[str, JSONObject | None]]) -> dict[str, Any]:
        """Each input a request to the client, tagged with the task (TK-09, TK-13)."""
        related = {mcp_types.RELATED_TASK_META_KEY: {"taskId": self._task_id}}
        tagged: dict[str, tuple[str, Any]] = {}
        for key, (method, params) in raw.items():
            body = dict(params or {})
            body["_meta"] = {**(body.get("_meta") or {}), **related}
            tagged[key] = (method, body)
        await self._runner.note_input(self._task_id, self._owner, waiting=True)
        results = await self._ask_by_request(tagged)
        await self._runner.note_input(self._task_id, self._owner, waiting=False)
        return results


class _NeverSeals:
    """A task's round never seals a ``requestState``: it waits instead."""

    def seal(self, *args: Any, **kwargs: Any) -> str:
        raise AssertionError("a task's input round never seals")  # pragma: no cover


_NEVER_SEALS: Any = _NeverSeals()
