"""``--era auto|modern|legacy`` for every ``trio-mcp`` command, and saying what was chosen.

``auto`` (the default) is the client's own choice: ``server/discover`` as a
probe, the handshake (``initialize``) when the server does not answer it as a
2026-07-28 server would (SI-14, SI-15). ``modern`` speaks only 2026-07-28,
``legacy`` only the handshake era. An explicit era the server does not speak
is a user error: :func:`open_cli_client` turns the refusal of the opening
request into one :class:`EraMismatch` line (``trio-mcp: error: ...``) naming
what the server answered, instead of a protocol error out of context.

Every command then says which era it got and at which version
(:func:`era_summary`, :func:`era_line`): ``era: modern (2026-07-28)``.

Connecting is bounded (``connect_timeout``, the commands' ``--timeout``): the
era probe and the opening together, so a server that never answers ends the
command within the bound with a :class:`ServerDidNotAnswer` naming the
requests it left unanswered.

Spec: SI-14, SI-15, VR-11, VR-13, VR-14.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING, Any, Literal, get_args

import trio

from .._client._connect import STDIO_PROBE_TIMEOUT, open_http_client, open_stdio_client
from .._errors import HandshakeRefused, MCPError, RPCError
from .._util import unwrapping
from ..protocol import Direction, MultiObserver, RequestObserver, RequestRecord, RequestState
from ._errors import CommandError

if TYPE_CHECKING:
    from .._client._client import Client

#: What ``--era`` accepts.
EraOption = Literal["auto", "modern", "legacy"]
ERA_CHOICES: tuple[str, ...] = get_args(EraOption)

#: The requests that open a connection, one per era.
_OPENING = {"modern": "server/discover", "legacy": "initialize"}
_ERA_NAMES = {"modern": "2026-07-28", "legacy": "the handshake era"}


class EraMismatch(CommandError):
    """The server does not speak the era asked for with ``--era`` (status 1)."""

    def __init__(self, era: str, message: str) -> None:
        super().__init__(message)
        #: The era that was asked for (``"modern"`` or ``"legacy"``).
        self.era = era


class ServerDidNotAnswer(CommandError):
    """Connecting took longer than ``--timeout``: the server left the opening
    requests unanswered (status 1)."""

    def __init__(self, unanswered: Sequence[str], seconds: float) -> None:
        asked = " or ".join(f"`{method}`" for method in unanswered)
        what = f"answer {asked}" if asked else "answer"
        super().__init__(f"the server did not {what} within {seconds:g} s (--timeout)")
        #: The methods sent and never answered, in the order they were sent.
        self.unanswered = tuple(unanswered)
        self.seconds = seconds


class _Opening(RequestObserver):
    """Notes whether the opening request (``server/discover`` or
    ``initialize``) of a session completed (an error after that is not about
    the era), and which of our requests were never answered."""

    def __init__(self) -> None:
        self.opened = False
        self._outbound: dict[Any, RequestRecord] = {}

    def on_transition(self, record: RequestRecord, old: RequestState | None) -> None:
        if record.direction is not Direction.OUTBOUND:
            return
        self._outbound[record.id] = record
        if record.method in _OPENING.values() and record.state is RequestState.COMPLETED:
            self.opened = True

    def unanswered(self) -> list[str]:
        """The methods of our requests that got neither a result nor an error."""
        return [
            r.method
            for r in self._outbound.values()
            if r.state is not RequestState.COMPLETED and r.error is None
        ]


def mismatch_message(era: str, error: RPCError | HandshakeRefused) -> str:
    """One line saying that the server does not speak *era*, and what it answered."""
    if isinstance(error, HandshakeRefused) and error.supported:
        answered = f"it speaks only {', '.join(error.supported)}"
    elif isinstance(error, RPCError):
        answered = f"{_OPENING[era]} was answered with error {error.code}: {error.message}"
    else:
        answered = str(error)
    other = "legacy" if era == "modern" else "modern"
    return (
        f"the server does not speak {_ERA_NAMES[era]} (--era {era}): {answered}; "
        f"try --era auto or --era {other}"
    )


@asynccontextmanager
async def open_cli_client(
    command: Sequence[str],
    *,
    era: EraOption = "auto",
    observer: RequestObserver | None = None,
    url: str | None = None,
    auth: bool = False,
    connect_timeout: float | None = None,
    connect_from: float | None = None,
    **options: Any,
) -> AsyncIterator[Client]:
    """:func:`~trio_mcp.open_stdio_client` for the server *command* in *era*,
    or :func:`~trio_mcp.open_http_client` for *url* (with *auth*: OAuth
    through the user's browser, tokens kept in the user's config directory).

    *connect_timeout* bounds connecting, the era probe included (over stdio
    the probe gets at most half of it, so that ``initialize`` is still asked),
    counted from *connect_from* (a :func:`trio.current_time`; default now).

    Raises:
        ServerDidNotAnswer: connecting took longer than *connect_timeout*.
        EraMismatch: *era* is ``modern`` or ``legacy`` and the server refused
            the opening request of that era (an error answer, or -32022
            naming only versions of the other era).
        As :func:`~trio_mcp.open_stdio_client` otherwise (``auto`` is never
        an :class:`EraMismatch`: the client falls back by itself).

    Cancellation: as :func:`~trio_mcp.open_stdio_client` (the server process
    is shut down, bounded, however the block is left). The bound on
    connecting is a cancel scope around the whole block whose deadline is
    lifted once the client is connected.
    """
    opening = _Opening()
    watched = opening if observer is None else MultiObserver(observer, opening)
    if connect_timeout is not None and url is None:
        options.setdefault("probe_timeout", min(STDIO_PROBE_TIMEOUT, connect_timeout / 2))
    if connect_from is None:
        connect_from = trio.current_time()
    deadline = math.inf if connect_timeout is None else connect_from + connect_timeout
    connected = False
    with trio.CancelScope(deadline=deadline) as bound:
        try:
            async with _connected(command, era, watched, opening, url, auth, options) as client:
                connected = True
                bound.deadline = math.inf
                yield client
        except MCPError as exc:
            # The bound cut the opening short; what that left behind (a
            # closed session) is not the story: the silence is.
            if connected or not bound.cancel_called:
                raise
            assert connect_timeout is not None
            raise ServerDidNotAnswer(opening.unanswered(), connect_timeout) from exc
    if bound.cancelled_caught and not connected:
        assert connect_timeout is not None
        raise ServerDidNotAnswer(opening.unanswered(), connect_timeout)


@asynccontextmanager
async def _connected(
    command: Sequence[str],
    era: EraOption,
    watched: RequestObserver,
    opening: _Opening,
    url: str | None,
    auth: bool,
    options: dict[str, Any],
) -> AsyncIterator[Client]:
    """The client of :func:`open_cli_client`, an era mismatch said as one."""
    async with AsyncExitStack() as stack:
        try:
            # The opening's one error comes out of the session's nursery in a
            # group of one: unwrap it to see what it is.
            async with unwrapping():
                if url is None:
                    opened = open_stdio_client(
                        command[0], command[1:], era=era, observer=watched, **options
                    )
                else:
                    options.pop("inherit_env", None)
                    if auth:
                        from ._auth import cli_provider

                        options["auth"] = await cli_provider(url, stack)
                    opened = open_http_client(url, era=era, observer=watched, **options)
                client = await stack.enter_async_context(opened)
        except (RPCError, HandshakeRefused) as exc:
            if era == "auto" or opening.opened:
                raise
            raise EraMismatch(era, mismatch_message(era, exc)) from exc
        yield client


def era_summary(client: Client, choice: str) -> dict[str, Any]:
    """What was chosen and why, JSON-ready: ``era``, ``protocol_version``,
    ``choice`` (the ``--era`` given) and ``how`` (a few words)."""
    return {
        "era": client.era,
        "protocol_version": client.protocol_version,
        "choice": choice,
        "how": _how(client, choice),
    }


def era_line(summary: dict[str, Any]) -> str:
    """``era: modern (2026-07-28), --era auto: server/discover answered``."""
    return (
        f"era: {summary['era']} ({summary['protocol_version']}), "
        f"--era {summary['choice']}: {summary['how']}"
    )


def _how(client: Client, choice: str) -> str:
    if choice != "auto":
        return f"as asked, {_OPENING[client.era]} answered"
    if client.era == "modern":
        return "the server answered the server/discover probe"
    probes = [
        r
        for r in client.session.requests()
        if r.direction is Direction.OUTBOUND and r.method == "server/discover"
    ]
    if not probes:
        # The command was remembered as handshake-era in this process, or the
        # server exited on the probe and was started again (VR-12, SI-14).
        return "initialize without a probe (a handshake-era server, known or restarted)"
    probe = probes[0]
    if probe.error is not None:
        why = f"refused ({probe.error.message})"
    elif probe.state is RequestState.CANCELLED:
        why = "unanswered in time"
    else:
        why = "not answered as a 2026-07-28 server would"
    return f"the server/discover probe was {why}, so initialize"
