"""What a client answers: roots, sampling and elicitation, from application handlers.

:class:`ClientHandlers` holds what the application registered and derives the
capabilities the client declares from it: a feature without a handler is not
declared, so the protocol layer refuses its requests with -32601 before any
code here runs (RT-05, SM-01, EL-01, LC-11). Every request that does arrive is
checked before the application sees it, and the application's answer is
checked before it is sent; bad input from the server gets -32602 and the
session goes on.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import trio

from .. import types as mcp_types
from .._errors import RPCError
from .._session import RequestContext
from ..protocol import ErrorCode
from ._elicitation import (
    ElicitationSchemaError,
    FormElicitation,
    URLElicitation,
    check_form_answer,
    check_form_schema,
    url_elicitation,
)
from ._task_receiver import ReceiverTasks

logger = logging.getLogger("trio_mcp.client")

#: Roots: a fixed list, or a function (sync or async) returning the current list.
RootsSource = (
    Sequence[mcp_types.Root]
    | Callable[[], Sequence[mcp_types.Root]]
    | Callable[[], Awaitable[Sequence[mcp_types.Root]]]
)
#: Answers ``sampling/createMessage``.
SamplingHandler = Callable[
    [mcp_types.CreateMessageRequestParams], Awaitable[mcp_types.CreateMessageResult]
]
#: Answers a form-mode ``elicitation/create``.
FormElicitationHandler = Callable[[FormElicitation], Awaitable[mcp_types.ElicitResult]]
#: Answers a URL-mode ``elicitation/create`` (the handler decides whether to open it).
URLElicitationHandler = Callable[[URLElicitation], Awaitable[mcp_types.ElicitResult]]

_INVALID_PARAMS = int(ErrorCode.INVALID_PARAMS)
_INTERNAL = int(ErrorCode.INTERNAL_ERROR)


def check_roots(roots: Sequence[mcp_types.Root]) -> list[mcp_types.Root]:
    """*roots* as a list, after checking each is a :class:`Root` with a ``file://`` URI.

    Raises:
        ValueError: a root is not a ``file://`` URI (RT-04).

    Spec: RT-04.
    """
    checked = list(roots)
    for root in checked:
        if not isinstance(root, mcp_types.Root):
            raise TypeError(f"roots must be trio_mcp.types.Root instances, not {root!r}")
        if not root.uri.startswith("file://"):
            raise ValueError(f"root URI {root.uri!r} is not a file:// URI (RT-04)")
    return checked


def check_sampling_messages(params: mcp_types.CreateMessageRequestParams) -> list[str]:
    """Problems with the tool-use structure of a sampling conversation (SM-05).

    A user message holding ``tool_result`` blocks holds nothing else, and every
    assistant ``tool_use`` is answered by the next message's ``tool_result`` s.
    """
    problems: list[str] = []
    messages = params.messages
    for i, message in enumerate(messages):
        blocks = message.content if isinstance(message.content, list) else [message.content]
        results = [b for b in blocks if isinstance(b, mcp_types.ToolResultContent)]
        if results and len(results) != len(blocks):
            problems.append(f"messages[{i}]: tool results mixed with other content")
        uses = {b.id for b in blocks if isinstance(b, mcp_types.ToolUseContent)}
        if uses:
            following = messages[i + 1] if i + 1 < len(messages) else None
            if following is None:
                continue  # the model's turn ends here; the answer comes later
            nxt = following.content if isinstance(following.content, list) else [following.content]
            answered = {b.tool_use_id for b in nxt if isinstance(b, mcp_types.ToolResultContent)}
            if following.role != "user" or answered != uses:
                problems.append(f"messages[{i + 1}]: must answer tool uses {sorted(uses)}")
    return problems


class ClientHandlers:
    """The application's handlers for server-to-client requests.

    Args:
        roots: the roots to expose (a list, or a function returning them).
        sampling: answers ``sampling/createMessage``.
        sampling_tools: the sampling handler understands ``tools``/``toolChoice``
            (2025-11-25); declares ``sampling.tools``.
        elicitation: answers form-mode elicitations.
        url_elicitation: answers URL-mode elicitations (2025-11-25).
        apply_elicitation_defaults: fill fields missing from an accepted form
            answer with the schema's defaults before validating it (EL-05).
        server_name: shown to handlers as who is asking (set after the handshake).
    """

    def __init__(
        self,
        *,
        roots: RootsSource | None = None,
        sampling: SamplingHandler | None = None,
        sampling_tools: bool = False,
        elicitation: FormElicitationHandler | None = None,
        url_elicitation: URLElicitationHandler | None = None,
        apply_elicitation_defaults: bool = False,
        tasks: ReceiverTasks | None = None,
    ) -> None:
        if roots is not None and not callable(roots):
            roots = check_roots(roots)
        self.roots = roots
        self.sampling = sampling
        self.sampling_tools = sampling_tools
        self.elicitation = elicitation
        self.url_elicitation = url_elicitation
        self.apply_elicitation_defaults = apply_elicitation_defaults
        #: Runs the server's task-augmented requests as tasks (2025-11-25), if given.
        self.tasks = tasks
        self.server_name = ""
        #: URL elicitations the application accepted, by id, until completed.
        self.pending_url: dict[str, trio.Event] = {}
        #: URL elicitations completed (ids), for waiters that come late.
        self.completed_url: set[str] = set()

    def capabilities(self) -> dict[str, Any]:
        """The client capabilities object: only what has a handler.

        Spec: RT-01, SM-01, SM-03, EL-01, EL-02.
        """
        caps: dict[str, Any] = {}
        if self.roots is not None:
            caps["roots"] = {"listChanged": True}
        if self.sampling is not None:
            caps["sampling"] = {"tools": {}} if self.sampling_tools else {}
        modes: dict[str, Any] = {}
        if self.elicitation is not None:
            modes["form"] = {}
        if self.url_elicitation is not None:
            modes["url"] = {}
        if modes:
            caps["elicitation"] = modes
        if self.tasks is not None:
            tasks = self.tasks.capabilities(caps)
            if tasks:
                caps["tasks"] = tasks
        return caps

    def replace_roots(self, roots: Sequence[mcp_types.Root]) -> None:
        """Expose *roots* from now on (see :meth:`Client.set_roots`).

        Raises:
            RuntimeError: no roots were declared (fixed at the handshake).
            ValueError: a root is not a ``file://`` URI.
        """
        self.require_roots()
        self.roots = check_roots(roots)

    def require_roots(self) -> None:
        """Raises RuntimeError unless the client declared roots."""
        if self.roots is None:
            raise RuntimeError("open the client with roots= to expose roots")

    async def handle_request(self, ctx: RequestContext) -> Any:
        """Answer one server request (in the request's own task and cancel scope).

        A task-augmented request the client declared goes to :attr:`tasks`
        (2025-11-25, TK-11); the server's ``tasks/*`` requests are answered by
        the tasks extension the client installed (``ReceiverTasks.extension``).

        Cancellation: the server's ``notifications/cancelled`` cancels the
        application's handler at its next checkpoint; nothing is sent then.
        """
        if self.tasks is not None:
            answered = await self.tasks.handle(ctx, self.answer)
            if answered is not NotImplemented:
                return answered
        return await self.answer(ctx.method, ctx.params)

    async def answer(self, method: str, params: Any, *, input_key: str | None = None) -> Any:
        """Answer one input the server asked for: a handshake-era request, or
        (2026-07-28) one entry of an input-required result's ``inputRequests``,
        with *params* structured into the method's params type.

        A 2026-07-28 URL elicitation has no ``elicitationId``: the URL handler
        sees the input's key (*input_key*) as its id, and nothing waits for a
        completion notice (the answer is the retry itself).

        Raises:
            RPCError: -32601 for a method without a handler, -32602 for params
                the handler must not see (as :meth:`handle_request` replies).

        Cancellation: the application's handler is cancelled at its next checkpoint.
        """
        if method == "roots/list" and self.roots is not None:
            return mcp_types.ListRootsResult(roots=await self.current_roots())
        if method == "sampling/createMessage" and self.sampling is not None:
            return await self._sample(params)
        if method == "elicitation/create":
            if isinstance(params, mcp_types.ModernElicitRequestURLParams):
                legacy_form = mcp_types.ElicitRequestURLParams(
                    message=params.message, url=params.url, elicitation_id=input_key or "input"
                )
                return await self._elicit_url(legacy_form, track=False)
            return await self._elicit(params)
        raise RPCError(int(ErrorCode.METHOD_NOT_FOUND), f"Method not found: {method}")

    async def current_roots(self) -> list[mcp_types.Root]:
        """The roots now (calls the roots function, if one was given).

        Raises:
            RPCError: -32603 when the roots function returns a bad root.
        """
        source = self.roots
        if source is None:
            return []
        if not callable(source):
            return list(source)
        value = source()
        if inspect.isawaitable(value):
            value = await value
        try:
            return check_roots(value)
        except (TypeError, ValueError) as exc:
            logger.error("the roots function returned a bad root: %s", exc)
            raise RPCError(_INTERNAL, "Internal error: invalid roots") from exc

    async def _sample(self, params: mcp_types.CreateMessageRequestParams) -> Any:
        assert self.sampling is not None
        if (params.tools or params.tool_choice) and not self.sampling_tools:
            # SM-03: the server must not send tools unless we declared sampling.tools.
            raise RPCError(
                _INVALID_PARAMS, "Tool use in sampling needs the sampling.tools capability"
            )
        problems = check_sampling_messages(params)
        if problems:
            raise RPCError(_INVALID_PARAMS, "Invalid sampling messages", {"errors": problems})
        result: Any = await self.sampling(params)
        if not isinstance(result, mcp_types.CreateMessageResult):
            logger.error("sampling handler returned %r, not a CreateMessageResult", result)
            raise RPCError(_INTERNAL, "Internal error")
        return result

    async def _elicit(self, params: mcp_types.ElicitRequestParams) -> mcp_types.ElicitResult:
        if isinstance(params, mcp_types.ElicitRequestURLParams):
            return await self._elicit_url(params)
        if self.elicitation is None:
            # EL-02: a mode we did not declare gets -32602.
            raise RPCError(_INVALID_PARAMS, "Form-mode elicitation was not declared")
        try:
            check_form_schema(params.requested_schema)
        except ElicitationSchemaError as exc:
            raise RPCError(
                _INVALID_PARAMS, "Invalid requestedSchema", {"errors": exc.errors}
            ) from None
        request = FormElicitation(
            message=params.message,
            schema=params.requested_schema,
            server_name=self.server_name,
            params=params,
        )
        result: Any = await self.elicitation(request)
        if not isinstance(result, mcp_types.ElicitResult):
            logger.error("elicitation handler returned %r, not an ElicitResult", result)
            raise RPCError(_INTERNAL, "Internal error")
        if result.action != "accept":
            return mcp_types.ElicitResult(action=result.action, meta=result.meta)
        content: dict[str, Any] = dict(result.content or {})
        if self.apply_elicitation_defaults:
            content = request.with_defaults(content)
        problems = check_form_answer(params.requested_schema, content)
        if problems:
            # Never send an answer that does not match what was asked (EL-17).
            logger.error("elicitation answer does not match the schema: %s", problems)
            raise RPCError(_INTERNAL, "Internal error: the client's answer was invalid")
        return mcp_types.ElicitResult(action="accept", content=content, meta=result.meta)

    async def _elicit_url(
        self, params: mcp_types.ElicitRequestURLParams, *, track: bool = True
    ) -> mcp_types.ElicitResult:
        if self.url_elicitation is None:
            raise RPCError(_INVALID_PARAMS, "URL-mode elicitation was not declared")
        request = url_elicitation(params, self.server_name)
        if isinstance(request, str):
            raise RPCError(_INVALID_PARAMS, f"Invalid URL elicitation: {request}")
        result: Any = await self.url_elicitation(request)
        if not isinstance(result, mcp_types.ElicitResult):
            logger.error("URL elicitation handler returned %r, not an ElicitResult", result)
            raise RPCError(_INTERNAL, "Internal error")
        if result.action == "accept" and track:
            self.pending_url.setdefault(params.elicitation_id, trio.Event())
        # URL mode carries no content (EL-07): consent only.
        return mcp_types.ElicitResult(action=result.action, meta=result.meta)

    def elicitation_completed(self, elicitation_id: str) -> bool:
        """Mark a URL elicitation complete; False (ignored) if the id is unknown (EL-09)."""
        event = self.pending_url.pop(elicitation_id, None)
        if event is None:
            return False
        self.completed_url.add(elicitation_id)
        event.set()
        return True

    async def wait_url_completed(self, elicitation_id: str) -> None:
        """Block until URL elicitation *elicitation_id* is complete (EL-08).

        Raises:
            KeyError: the id is neither pending nor completed.

        Cancellation:
            A checkpoint, also when the id already completed; a cancelled wait
            leaves the elicitation tracked, so it can be waited for again.
        """
        if elicitation_id in self.completed_url:
            await trio.lowlevel.checkpoint()
            return
        event = self.pending_url.get(elicitation_id)
        if event is None:
            raise KeyError(elicitation_id)
        await event.wait()
