"""What a check works with: its connection, the era's request shape, the tools.

A :class:`Probe` is made for one check. It gives the check the era's shared
connection (or fresh ones, each closed when the check ends), builds requests
in the era's shape (``_meta`` with the version, capabilities and client info
in 2026-07-28), waits for answers with a bound, and finds the tools the
checks need by name and schema (a slow one, one that reports progress, an
echo), unless the options name them.

Safe by default: the checks call only the tools the user names and those the
server annotates ``readOnlyHint: true``; ``call_unannotated_tools`` (the
``--call-unannotated-tools`` option) adds every other tool except those
annotated ``destructiveHint: true``, which are called only when named. The
arguments of a tool found this way are guessed from its schema, and what a
check says about such a call names the option that would set them.

Cancellation: every wait is bounded by :attr:`Options.timeout` (or less); a
check cancelled by its own bound closes the connections it opened.

Spec: LC-01..LC-04, ME-06.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Sequence
from typing import Any

import attrs
import orjson

from .._version import __version__
from ..protocol import LATEST_VERSION, RequestId
from ._model import LEGACY, MODERN, CheckFailed, CheckSkipped
from ._stdio import open_stdio
from ._target import StdioTarget, Target
from ._wire import Wire, is_response_to, new_id

MODERN_VERSION = "2026-07-28"
#: Bound on the first answer of a new connection (the server starting up).
STARTUP_TIMEOUT = 20.0
CLIENT_INFO = {"name": "trio-mcp-check", "version": __version__}

_SECONDS = re.compile(r"sec|duration|delay|time|wait", re.I)
_MILLIS = re.compile(r"ms$|millis", re.I)
_STEPS = re.compile(r"step|count|iter|times|^n$", re.I)


@attrs.frozen
class Options:
    """How the checks run; tools may be named instead of found."""

    slow_tool: str | None = None
    slow_args: dict[str, Any] | None = None
    progress_tool: str | None = None
    progress_args: dict[str, Any] | None = None
    echo_tool: str | None = None
    #: Also call tools the server does not annotate ``readOnlyHint: true``
    #: (never one annotated ``destructiveHint: true`` unless it is named).
    call_unannotated_tools: bool = False
    #: Bound on any one answer, in seconds.
    timeout: float = 10.0
    #: Bound on the server's exit after end of input or SIGTERM, in seconds.
    exit_timeout: float = 5.0


def error_code(message: dict[str, Any] | None) -> int | None:
    """The error code of an error response (None for a result or nothing)."""
    error = (message or {}).get("error")
    code = error.get("code") if isinstance(error, dict) else None
    return code if isinstance(code, int) else None


def result_text(message: dict[str, Any]) -> str:
    """Every text of a tools/call answer, with its structured content, as one string."""
    result = message.get("result")
    if not isinstance(result, dict):
        return orjson.dumps(message.get("error")).decode()
    texts = [
        str(block.get("text", ""))
        for block in result.get("content") or []
        if isinstance(block, dict)
    ]
    if "structuredContent" in result:
        texts.append(orjson.dumps(result["structuredContent"]).decode())
    return "\n".join(texts)


def _numeric_args(tool: dict[str, Any], long: bool, kind: str) -> dict[str, Any] | None:
    """Arguments for a tool whose required inputs are all numbers, or None."""
    schema = tool.get("inputSchema") or {}
    properties = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    args: dict[str, Any] = {}
    for name, prop in properties.items():
        kinds = prop.get("type") if isinstance(prop, dict) else None
        numeric = kinds in ("integer", "number") or (
            isinstance(kinds, list) and ({"integer", "number"} & set(kinds))
        )
        if not numeric:
            if name in required:
                return None
            continue
        integer = kinds == "integer" or (isinstance(kinds, list) and "number" not in kinds)
        if _MILLIS.search(name):
            value: float = 30_000 if long else 300
        elif _SECONDS.search(name):
            value = 30 if long else 0.3
        elif _STEPS.search(name):
            value = (3000 if kind == "slow" else 200) if long else 5
        elif name in required:
            value = 30 if long else 3
        else:
            continue
        args[name] = int(value) if integer else value
    return args


@attrs.frozen
class ToolChoice:
    """A tool a check calls: its name, its arguments, and what was guessed."""

    name: str
    arguments: dict[str, Any]
    #: The options that name the tool and set its arguments (``--slow-tool``, ``--slow-args``).
    tool_option: str
    args_option: str
    #: Whether the checker picked the tool, and whether it made the arguments up.
    guessed_tool: bool = False
    guessed_args: bool = False

    def described(self) -> str:
        """``sleep {"seconds": 30}``: the call as a message shows it."""
        return f"{self.name} {orjson.dumps(self.arguments).decode()}"

    def advice(self) -> str:
        """What to set when the call did not suit the check ('' when the user set it all)."""
        if self.guessed_tool:
            return (
                f" (the checker picked {self.name} and guessed its arguments: name a tool "
                f"with {self.tool_option} NAME {self.args_option} JSON)"
            )
        if self.guessed_args:
            return f" (the arguments were guessed: set them with {self.args_option} JSON)"
        return ""


def _annotations(tool: dict[str, Any]) -> dict[str, Any]:
    """The tool's annotations as listed (a malformed value counts as none)."""
    annotations = tool.get("annotations")
    return annotations if isinstance(annotations, dict) else {}


def may_call(tool: dict[str, Any], options: Options) -> bool:
    """Whether the checker may call *tool* without it being named (see the module docstring)."""
    annotations = _annotations(tool)
    if annotations.get("destructiveHint") is True:
        return False
    return annotations.get("readOnlyHint") is True or options.call_unannotated_tools


def _passed_over(tools: list[dict[str, Any]], options: Options) -> str:
    """Why tools were not called: the sentence a SKIP ends with."""
    names = [
        f"{tool.get('name')}"
        + (" (destructive)" if _annotations(tool).get("destructiveHint") is True else "")
        for tool in tools
        if not may_call(tool, options)
    ]
    if not names:
        return ""
    how = (
        "only tools named on the command line, or annotated readOnlyHint: true, are called"
        if not options.call_unannotated_tools
        else "a tool annotated destructiveHint: true is called only when named"
    )
    more = (
        ""
        if options.call_unannotated_tools
        else " (or allow the rest with --call-unannotated-tools)"
    )
    return f"; {how}{more}; not called: {', '.join(names[:8])}"


class Probe:
    """One check's view of the server under test."""

    def __init__(
        self,
        target: Target,
        era: str,
        options: Options,
        findings: dict[str, Any],
        stack: contextlib.AsyncExitStack,
        shared: Wire | None = None,
    ) -> None:
        self.target = target
        self.era = era
        self.options = options
        self.findings = findings
        self._stack = stack
        self._shared = shared
        #: Every wire this check used (its frames go in the report).
        self.wires: list[Wire] = [shared] if shared is not None else []

    @property
    def transport(self) -> str:
        return self.target.transport

    @property
    def wire(self) -> Wire:
        """The era's shared connection (handshake done in the handshake era)."""
        assert self._shared is not None, "a fresh check opens its own wires"
        return self._shared

    async def open_under(self, wrapper: Sequence[str], *, handshake: bool = True) -> Wire:
        """A fresh stdio connection whose server *wrapper* starts (the target's
        command is appended to it), closed after the check; its pid is the wrapper's."""
        assert isinstance(self.target, StdioTarget), "only a stdio server has a parent to wrap"
        command = (*wrapper, *self.target.command)
        wire = await self._stack.enter_async_context(open_stdio(command, cwd=self.target.cwd))
        self.wires.append(wire)
        if handshake and self.era == LEGACY:
            await self.handshake(wire)
        return wire

    async def open(self, *, handshake: bool = True) -> Wire:
        """A fresh connection (a new process over stdio), closed after the check."""
        wire = await self._stack.enter_async_context(self.target.connect(self.era))
        self.wires.append(wire)
        if handshake and self.era == LEGACY:
            await self.handshake(wire)
        return wire

    # ---------------------------------------------------------- requests

    def meta(self, progress_token: RequestId | None = None) -> dict[str, Any]:
        meta: dict[str, Any] = {}
        if self.era == MODERN:
            meta = {
                "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
            }
        if progress_token is not None:
            meta["progressToken"] = progress_token
        return meta

    def params(
        self, params: dict[str, Any] | None = None, progress_token: RequestId | None = None
    ) -> dict[str, Any] | None:
        """*params* in the era's shape (``_meta`` added where needed)."""
        meta = self.meta(progress_token)
        if not meta:
            return params
        return {**(params or {}), "_meta": meta}

    async def start(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        wire: Wire | None = None,
        progress_token: RequestId | None = None,
        request_id: RequestId | None = None,
    ) -> RequestId:
        """Send a request in the era's shape without waiting; its id."""
        wire = wire or self.wire
        return await wire.send_request(method, self.params(params, progress_token), request_id)

    async def answer(
        self, request_id: RequestId, *, wire: Wire | None = None, within: float | None = None
    ) -> dict[str, Any]:
        """The answer to *request_id*; CheckFailed when none comes in time."""
        wire = wire or self.wire
        bound = self.options.timeout if within is None else within
        if not wire.received:
            # The first answer on a new connection waits for the server to
            # start, which is not the responsiveness being checked.
            bound = max(bound, STARTUP_TIMEOUT)
        message = await wire.wait_for(is_response_to(request_id), bound)
        if message is None:
            ended = " (the server's output ended)" if wire.ended else ""
            raise CheckFailed(f"no answer to request {request_id!r} within {bound:g}s{ended}")
        return message

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        wire: Wire | None = None,
        progress_token: RequestId | None = None,
        within: float | None = None,
    ) -> dict[str, Any]:
        """Send a request in the era's shape and return its answer (bounded)."""
        wire = wire or self.wire
        rid = await self.start(method, params, wire=wire, progress_token=progress_token)
        return await self.answer(rid, wire=wire, within=within)

    async def handshake(self, wire: Wire, version: str = LATEST_VERSION) -> dict[str, Any]:
        """``initialize`` and ``notifications/initialized``; the initialize result."""
        answer = await self.request("initialize", self.initialize_params(version), wire=wire)
        result = answer.get("result")
        if not isinstance(result, dict):
            raise CheckFailed(f"initialize was refused: {orjson.dumps(answer).decode()}")
        version_chosen = result.get("protocolVersion")
        if hasattr(wire, "protocol_version") and isinstance(version_chosen, str):
            wire.protocol_version = version_chosen
        await wire.send_notification("notifications/initialized")
        return result

    @staticmethod
    def initialize_params(version: str = LATEST_VERSION) -> dict[str, Any]:
        return {"protocolVersion": version, "capabilities": {}, "clientInfo": CLIENT_INFO}

    @property
    def liveness_method(self) -> str:
        """What shows the session still answers: ``ping``, or ``server/discover`` in 2026-07-28."""
        return "server/discover" if self.era == MODERN else "ping"

    async def still_answers(self, wire: Wire | None = None) -> None:
        """CheckFailed unless the session still answers a request with a result."""
        answer = await self.request(self.liveness_method, wire=wire)
        if "result" not in answer:
            raise CheckFailed(
                f"the session no longer answers {self.liveness_method}: "
                f"{orjson.dumps(answer).decode()}"
            )

    # ------------------------------------------------------------- tools

    async def tools(self) -> list[dict[str, Any]]:
        """The server's tools (every page), listed once per era."""
        key = f"tools:{self.era}"
        if key not in self.findings:
            tools: list[dict[str, Any]] = []
            cursor: str | None = None
            for _ in range(20):
                answer = await self.request("tools/list", {"cursor": cursor} if cursor else None)
                result = answer.get("result")
                if not isinstance(result, dict):
                    break
                tools.extend(t for t in result.get("tools") or [] if isinstance(t, dict))
                cursor = result.get("nextCursor")
                if not isinstance(cursor, str):
                    break
            self.findings[key] = tools
        listed: list[dict[str, Any]] = self.findings[key]
        return listed

    async def _named(self, name: str) -> dict[str, Any]:
        for tool in await self.tools():
            if tool.get("name") == name:
                return tool
        raise CheckSkipped(f"the server has no tool {name!r}")

    async def callable_tools(self) -> list[dict[str, Any]]:
        """The tools the checker may call without their being named."""
        return [tool for tool in await self.tools() if may_call(tool, self.options)]

    async def slow_tool(self) -> ToolChoice:
        """A tool that takes long (about 30 s), and its arguments."""
        options = ("--slow-tool", "--slow-args")
        if self.options.slow_tool:
            tool = await self._named(self.options.slow_tool)
            given = self.options.slow_args
            args = given or _numeric_args(tool, True, "slow") or {}
            return ToolChoice(self.options.slow_tool, args, *options, guessed_args=given is None)
        best: tuple[int, str, dict[str, Any]] | None = None
        for tool in await self.callable_tools():
            name = str(tool.get("name", ""))
            text = f"{name} {tool.get('description') or ''}".lower()
            found = _numeric_args(tool, True, "slow")
            if not found:
                continue
            score = 3 if re.fullmatch(r"sleep|wait|delay", name) else 0
            score += 2 if re.search(r"sleep|wait|slow|delay|long", text) else 0
            if score and (best is None or score > best[0]):
                best = (score, name, found)
        if best is None:
            raise CheckSkipped(
                "no slow tool it may call found: name one with --slow-tool NAME --slow-args JSON"
                + _passed_over(await self.tools(), self.options)
            )
        return ToolChoice(best[1], best[2], *options, guessed_tool=True, guessed_args=True)

    async def progress_tool(self, *, long: bool = False) -> ToolChoice:
        """A tool that reports progress, and its arguments (*long*: a run to cancel)."""
        options = ("--progress-tool", "--progress-args")
        if self.options.progress_tool:
            tool = await self._named(self.options.progress_tool)
            given = self.options.progress_args
            args = given or _numeric_args(tool, long, "progress") or {}
            return ToolChoice(
                self.options.progress_tool, args, *options, guessed_args=given is None
            )
        best: tuple[int, str, dict[str, Any]] | None = None
        for tool in await self.callable_tools():
            name = str(tool.get("name", ""))
            description = str(tool.get("description") or "").lower()
            numeric = _numeric_args(tool, long, "progress")
            if numeric is None:
                continue
            score = 3 if "progress" in description else 0
            score += 1 if re.search(r"progress|report|step|count|slow", name.lower()) else 0
            if score and (best is None or score > best[0]):
                best = (score, name, numeric)
        if best is None:
            raise CheckSkipped(
                "no tool it may call that reports progress found: name one with "
                "--progress-tool NAME --progress-args JSON"
                + _passed_over(await self.tools(), self.options)
            )
        return ToolChoice(best[1], best[2], *options, guessed_tool=True, guessed_args=True)

    async def echo_tool(self) -> tuple[str, str] | None:
        """A tool whose answer contains its one string argument: (name, argument), or None.

        Only the tool named with ``--echo-tool`` is tried when there is one;
        otherwise those the checker may call (see :func:`may_call`).
        """
        key = f"echo:{self.era}"
        if key in self.findings:
            known: tuple[str, str] | None = self.findings[key]
            return known
        candidates: list[tuple[str, str]] = []
        for tool in await self.tools():
            named = tool.get("name") == self.options.echo_tool
            if not named and (self.options.echo_tool or not may_call(tool, self.options)):
                continue
            schema = tool.get("inputSchema") or {}
            properties = schema.get("properties") or {}
            required = list(schema.get("required") or [])
            strings = [
                n
                for n, p in properties.items()
                if isinstance(p, dict) and p.get("type") == "string"
            ]
            if len(strings) >= 1 and set(required) <= {strings[0]}:
                candidates.append((str(tool["name"]), strings[0]))
        candidates.sort(key=lambda c: c[0] != "echo")
        found: tuple[str, str] | None = None
        for name, argument in candidates[:4]:
            token = f"check-echo-{new_id()}"
            answer = await self.request(
                "tools/call", {"name": name, "arguments": {argument: token}}
            )
            if token in result_text(answer):
                found = (name, argument)
                break
        self.findings[key] = found
        return found

    async def without_echo(self) -> str:
        """Why no echo tool is used, and the option to name one (for a check's detail)."""
        if self.options.echo_tool:
            return f" ({self.options.echo_tool} did not answer with its argument)"
        return (
            " (no tool it may call answers with its argument: name one with --echo-tool NAME"
            + _passed_over(await self.tools(), self.options)
            + ")"
        )
