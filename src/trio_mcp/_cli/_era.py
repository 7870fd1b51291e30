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

Spec: SI-14, SI-15, VR-11, VR-13, VR-14.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING, Any, Literal, get_args

from .._client._connect import open_http_client, open_stdio_client
from .._errors import HandshakeRefused, RPCError
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


class _Opening(RequestObserver):
    """Notes whether the opening request (``server/discover`` or
    ``initialize``) of a session completed: an error after that is not about
    the era."""

    def __init__(self) -> None:
        self.opened = False

    def on_transition(self, record: RequestRecord, old: RequestState | None) -> None:
        if (
            record.direction is Direction.OUTBOUND
            and record.method in _OPENING.values()
            and record.state is RequestState.COMPLETED
        ):
            self.opened = True


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
    **options: Any,
) -> AsyncIterator[Client]:
    """:func:`~trio_mcp.open_stdio_client` for the server *command* in *era*,
    or :func:`~trio_mcp.open_http_client` for *url* (with *auth*: OAuth
    through the user's browser, tokens kept in the user's config directory).

    Raises:
        EraMismatch: *era* is ``modern`` or ``legacy`` and the server refused
            the opening request of that era (an error answer, or -32022
            naming only versions of the other era).
        As :func:`~trio_mcp.open_stdio_client` otherwise (``auto`` is never
        an :class:`EraMismatch`: the client falls back by itself).

    Cancellation: as :func:`~trio_mcp.open_stdio_client` (the server process
    is shut down, bounded, however the block is left).
    """
    opening = _Opening()
    watched = opening if observer is None else MultiObserver(observer, opening)
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
