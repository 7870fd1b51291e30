"""The client's requests that are one round trip: each as its era shapes it,
and any method, a custom one included.

Theory of operation
-------------------
What differs between the eras for these requests is read from the negotiated
:class:`~trio_mcp.protocol.Revision`, once, by :class:`Requests`:

* ``ping``: 2026-07-28 has none; ``server/discover``, the one request every
  modern server must answer, takes its place and its result is dropped;
* the log level: ``logging/setLevel`` in the handshake era; in 2026-07-28 a
  ``_meta`` key every later request carries, and the server sends messages
  only about those requests, while they run (ME-15, LG-07);
* the roots: ``notifications/roots/list_changed`` in the handshake era;
  nothing in 2026-07-28, where the server asks for the roots in each request
  that needs them;
* ``completion/complete``: the context arguments only where the revision has
  them (2025-06-18 and later).

:meth:`Requests.call` and :meth:`Requests.notify` send any method (an
extension's, the server's own): a request's result is read into the type the
caller names; a notification that cannot reach the server (2026-07-28 over
Streamable HTTP, where no session receives it) is refused before anything is
sent.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import trio

from .. import types as mcp_types
from .._errors import InvalidPeerResult
from .._session import Session, SessionDefault
from .._transport import EraHints
from ..protocol import LocalProtocolError, Progress


class Requests:
    """The client's one-round-trip requests (see the module docstring).

    Args:
        session: the client's session, its era negotiated.
        modern: whether the era is 2026-07-28.
    """

    __slots__ = ("_modern", "_revision", "_session")

    def __init__(self, session: Session, *, modern: bool) -> None:
        revision = session.protocol.revision
        assert revision is not None  # negotiated before the client runs
        self._session = session
        self._revision = revision
        self._modern = modern

    async def ping(self) -> None:
        """``ping``, or ``server/discover`` in 2026-07-28 (see :meth:`Client.ping`).

        Cancellation: as :meth:`Session.request`.
        """
        if not self._revision.ping:
            await self._session.request("server/discover")
            return
        await self._session.request("ping")

    async def complete(
        self,
        ref: mcp_types.PromptReference | mcp_types.ResourceTemplateReference,
        argument: str,
        value: str,
        context_arguments: dict[str, str] | None,
    ) -> mcp_types.CompleteResult:
        """``completion/complete`` (see :meth:`Client.complete`).

        Cancellation: as :meth:`Session.request`.
        """
        context = None
        if context_arguments is not None and self._revision.completion_context:
            context = mcp_types.CompletionContext(arguments=context_arguments)
        argument_ = mcp_types.CompletionArgument(name=argument, value=value)
        params = mcp_types.CompleteRequestParams(ref=ref, argument=argument_, context=context)
        result: mcp_types.CompleteResult = await self._session.request(
            "completion/complete", params
        )
        return result

    async def set_logging_level(self, level: mcp_types.LoggingLevel | str) -> None:
        """Ask for log messages at *level* (see :meth:`Client.set_logging_level`).

        Cancellation: as :meth:`Session.request`; in 2026-07-28 a checkpoint only.
        """
        level = mcp_types.LoggingLevel(level)
        if self._revision.request_scoped_logging:
            self._session.protocol.set_request_meta(mcp_types.LOG_LEVEL_META_KEY, level.value)
            await trio.lowlevel.checkpoint()
            return
        await self._session.request("logging/setLevel", {"level": level.value})

    async def roots_changed(self) -> None:
        """Tell the server the roots changed, where the era has a way to
        (see :meth:`Client.notify_roots_changed`).

        Cancellation: as :meth:`Session.notify`.
        """
        if not self._revision.server_requests:
            # 2026-07-28 has no such notification: the server asks for the
            # roots in each request that needs them.
            await trio.lowlevel.checkpoint()
            return
        await self._session.notify("notifications/roots/list_changed")

    async def call(
        self,
        method: str,
        params: Any,
        result_type: Any,
        on_progress: Callable[[Progress], None] | None,
        progress_idle_timeout: float | SessionDefault | None,
        max_duration: float | SessionDefault | None,
    ) -> Any:
        """The result of *method* (see :meth:`Client.call`).

        Raises:
            InvalidPeerResult: the result does not fit *result_type*.

        Cancellation: as :meth:`Session.request`.
        """
        result = await self._session.request(
            method,
            params,
            on_progress=on_progress,
            progress_idle_timeout=progress_idle_timeout,
            max_duration=max_duration,
            custom=True,
        )
        if result_type is None or isinstance(result, result_type):
            return result
        try:
            return mcp_types.converter.structure(result, result_type)
        except Exception as exc:  # cattrs raises groups: one error for the caller
            name = getattr(result_type, "__name__", str(result_type))
            raise InvalidPeerResult(
                f"the result of {method} does not fit {name}", [str(exc)]
            ) from exc

    async def notify(self, method: str, params: Any) -> None:
        """Send the notification *method* (see :meth:`Client.notify`).

        Raises:
            LocalProtocolError: 2026-07-28 over Streamable HTTP.

        Cancellation: as :meth:`Session.notify`.
        """
        transport = self._session.transport
        if self._modern and isinstance(transport, EraHints) and transport.answers_every_request:
            raise LocalProtocolError(
                f"{method} cannot reach the server: in 2026-07-28 over HTTP a client's "
                "notification reaches no session; send it as a request instead"
            )
        await self._session.notify(method, params, custom=True)
