"""Tools: definitions from functions, argument binding, calling, and results.

Two error channels (TL-13, TL-14):

* protocol errors are JSON-RPC errors: an unknown tool is -32602; an
  :class:`~trio_mcp.RPCError` raised by the tool is sent as is;
* everything that goes wrong *inside* the tool is a result with
  ``isError: true``: invalid arguments (the text names the argument and says
  why), :class:`ToolError` (its message), and any other exception (a generic
  message; the traceback goes to the ``trio_mcp.server`` logger, never to the
  client).

Results: a return annotation that is structured (attrs class, dataclass,
pydantic model, TypedDict, dict, list, tuple, set, numbers, Enum, and the
scalars of :mod:`trio_mcp._server._user_types` such as ``datetime``, ``bytes``
or ``Decimal``) gives the tool an ``outputSchema``; its value is
sent as ``structuredContent`` plus the same JSON as text (TL-07, TL-09), for
revisions that have structured output (2025-06-18+). Values that are not
objects are wrapped as ``{"result": value}`` because ``structuredContent`` is
an object in the handshake era (TL-08). Strings, content blocks and lists of
them are returned as content.

The ``x-mcp-header`` annotations of the input schema (from ``Header`` marks or
in an explicit ``input_schema``) are read and checked once, at registration:
an invalid one refuses the tool (HM-26), and the HTTP endpoint reads the
valid ones from :attr:`RegisteredTool.header_annotations` to check a call's
``Mcp-Param-*`` headers.

Spec: TL-06, TL-07, TL-08, TL-09, TL-13, TL-14, TL-20, HM-25, HM-26, HM-30.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import logging
import re
import typing
from collections.abc import Callable, Collection, Mapping
from typing import Any, Literal, TypedDict, Unpack

import attrs
import orjson
import trio

from .. import types as mcp_types
from .._errors import MCPError, RPCError
from .._session import RequestContext
from ..protocol import ErrorCode
from ..protocol._headers import HeaderAnnotation, InvalidHeaderAnnotation, header_annotations
from ._context import Context, ContextServer
from ._option_values import check_definition, json_object, spec_object, spec_objects
from ._schema import (
    FunctionSignature,
    describe_errors,
    is_object_schema,
    is_structured_annotation,
    type_schema,
    validator_class,
)
from ._scopes import check_scopes
from ._user_types import user_converter

logger = logging.getLogger("trio_mcp.server")

CONTENT_TYPES = (
    mcp_types.TextContent,
    mcp_types.ImageContent,
    mcp_types.AudioContent,
    mcp_types.ResourceLink,
    mcp_types.EmbeddedResource,
)

_TOOL_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.")


class ToolError(MCPError):
    """Raise from a tool to return an ``isError`` result with this message.

    Any other exception gives an ``isError`` result with a generic message (the
    traceback is logged, never sent); raise :class:`~trio_mcp.RPCError` for a
    JSON-RPC error instead.

    Spec: TL-13, TL-14.
    """


class ToolOptions(TypedDict, total=False):
    """The keyword options of a tool's registration (:meth:`Server.add_tool`)."""

    #: The ``Tool`` fields; the description defaults to the docstring's summary.
    #: ``annotations`` and each icon may also be given in the spec's JSON form
    #: (``annotations={"readOnlyHint": True}``), converted once at registration.
    title: str | None
    description: str | None
    annotations: mcp_types.ToolAnnotations | Mapping[str, Any] | None
    icons: list[mcp_types.Icon | Mapping[str, Any]] | None
    meta: dict[str, Any] | None
    #: False: no ``outputSchema`` even for a structured return annotation;
    #: True: require one. None: from the annotation.
    structured_output: bool | None
    #: The tool's own ``inputSchema``, listed and validated as given instead of
    #: the one generated from the signature (its properties must be parameters).
    input_schema: Mapping[str, Any] | None
    #: Whether a call may (``"optional"``), must (``"required"``) or must not
    #: (``"forbidden"``, the default) run as a task (TK-04, TL-18, TK-19).
    task_support: Literal["forbidden", "optional", "required"]
    #: 2026-07-28: the call runs as a request (input-required rounds
    #: included) until the handler calls ``ctx.start_task()``, which hands the
    #: rest to a task (SEP-2663: input rounds before the task is created).
    defer_task: bool
    #: OAuth scopes a caller's access token must grant to call the tool
    #: (refused otherwise: HTTP 403 ``insufficient_scope``, AU-12; see
    #: ``trio_mcp._server._scopes``).
    scopes: Collection[str] | None


def check_options(options: Mapping[str, object], known: type[Mapping[str, object]]) -> None:
    """Refuse keyword options that *known* (a ``TypedDict`` of options) does not name,
    as a signature with those keywords spelled out would.

    Raises:
        TypeError: an unknown option.
    """
    unknown = sorted(options.keys() - getattr(known, "__optional_keys__", frozenset()))
    if unknown:
        raise TypeError(f"unexpected keyword argument(s): {', '.join(unknown)}")


def check_tool_name(name: str) -> None:
    """Refuse names outside TL-11 (1-128 chars of ``A-Z a-z 0-9 _ - .``).

    Raises:
        ValueError: the name breaks the rule.
    """
    if not 1 <= len(name) <= 128 or not set(name) <= _TOOL_NAME_CHARS:
        raise ValueError(f"invalid tool name {name!r}: use 1-128 characters of A-Z a-z 0-9 _ - .")


# Words in a parameter or header name that say it holds a secret (HM-30).
_SECRET_WORDS = frozenset(
    {"password", "passwd", "secret", "token", "apikey", "credential", "credentials", "ssn"}
)
_WORD = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")


def _looks_secret(text: str) -> bool:
    words = [w.lower() for w in _WORD.findall(text)]
    pairs = {a + b for a, b in itertools.pairwise(words)}
    return bool(_SECRET_WORDS & (set(words) | pairs))


def check_header_annotations(
    tool_name: str, input_schema: Mapping[str, Any]
) -> tuple[HeaderAnnotation, ...]:
    """The ``x-mcp-header`` annotations of a tool being registered.

    A name that looks like a secret (password, token, API key...) is logged
    as a warning: header values are seen by every intermediary (HM-30).

    Raises:
        InvalidHeaderAnnotation: one breaks HM-26; the message names the tool,
            the parameter (the first key on the path) and the reason.

    Spec: HM-26, HM-30.
    """
    try:
        found = header_annotations(input_schema)
    except InvalidHeaderAnnotation as exc:
        first = exc.path[0] if exc.path else None
        where = f" parameter {first!r}:" if first is not None and first[:1] != "<" else ""
        raise InvalidHeaderAnnotation(f"tool {tool_name!r}:{where} {exc}", exc.path) from None
    for annotation in found:
        if _looks_secret(annotation.name) or any(map(_looks_secret, annotation.path)):
            logger.warning(
                "tool %s mirrors %s into the %s header, which every intermediary sees; "
                "do not mark secrets (passwords, keys, tokens, personal data)",
                tool_name,
                ".".join(annotation.path),
                annotation.header,
            )
    return found


async def call_function(fn: Callable[..., Any], kwargs: dict[str, Any], ctx: Context | None) -> Any:
    """Call a registered function: ``async def`` directly, a plain function in a
    worker thread.

    Cancellation:
        An ``async`` function is cancelled at its next checkpoint. A sync
        function's worker thread cannot be interrupted: on cancellation it is
        *abandoned* (``abandon_on_cancel=True``), the request ends at once, and
        whatever the thread returns later is discarded. The request's record
        (``in_worker_thread``), ``ctx.ran_in_thread`` and the debug log say that
        a thread was used.
    """
    if inspect.iscoroutinefunction(fn):
        return await fn(**kwargs)
    if ctx is not None:
        ctx.ran_in_thread = True
        # The request's record says so too (observers and requests() see it).
        ctx.session.protocol.note_worker_thread(ctx.request_id)
    logger.debug("running %s in a worker thread (abandoned on cancel)", fn)
    return await trio.to_thread.run_sync(functools.partial(fn, **kwargs), abandon_on_cancel=True)


def is_async(fn: Callable[..., Any]) -> bool:
    return inspect.iscoroutinefunction(fn)


@attrs.frozen
class RegisteredTool:
    """A tool as registered: its wire definitions and how to call it."""

    name: str
    fn: Callable[..., Any]
    signature: FunctionSignature
    #: The definition for 2025-06-18+ (title, outputSchema, icons, _meta).
    definition: mcp_types.Tool
    #: The definition for older revisions (no structured-output fields).
    legacy_definition: mcp_types.Tool
    output_schema: dict[str, Any] | None
    #: Wrap the structured value as ``{"result": value}``.
    wrap_output: bool
    output_validator: Any
    wants_context: bool
    #: ``fn`` is an ``async def`` (decided once: ``inspect`` is slow per call).
    is_async: bool = False
    #: The ``x-mcp-header`` annotations of the input schema, checked (HM-26).
    header_annotations: tuple[HeaderAnnotation, ...] = ()
    #: ``"forbidden"``, ``"optional"`` or ``"required"`` (TK-04).
    task_support: str = "forbidden"
    #: The handler starts the task itself (``ctx.start_task()``).
    defer_task: bool = False
    #: The definition for 2025-11-25, with ``execution.taskSupport`` (TL-18).
    tasks_definition: mcp_types.Tool | None = None
    #: The OAuth scopes a caller must hold (``scopes=``).
    scopes: frozenset[str] = frozenset()

    @classmethod
    def from_function(
        cls,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        **options: Unpack[ToolOptions],
    ) -> RegisteredTool:
        """Build a tool from *fn* (see :meth:`Server.add_tool`).

        Raises:
            TypeError: unsupported parameter or return annotation, or an
                ``input_schema`` that does not fit *fn*.
            ValueError: an invalid tool name.
            InvalidHeaderAnnotation: an ``x-mcp-header`` breaks HM-26.
        """
        check_options(options, ToolOptions)
        tool_name = fn.__name__ if name is None else name
        check_tool_name(tool_name)
        try:
            signature = FunctionSignature.from_function(
                fn,
                context_types=(Context, RequestContext),
                input_schema=options.get("input_schema"),
            )
        except TypeError as exc:
            raise TypeError(f"tool {tool_name!r}: {exc}") from None
        annotations = check_header_annotations(tool_name, signature.input_schema)
        returns = typing.get_type_hints(fn).get("return", inspect.Signature.empty)
        structured = is_structured_annotation(returns)
        structured_output = options.get("structured_output")
        if structured_output is True and not structured:
            raise TypeError(
                f"tool {tool_name!r}: structured_output=True needs a structured return "
                f"annotation, not {returns!r}"
            )
        output_schema = None
        wrap = False
        if structured and structured_output is not False:
            schema = type_schema(returns)
            if not is_object_schema(schema):
                schema = {
                    "type": "object",
                    "properties": {"result": schema},
                    "required": ["result"],
                }
                wrap = True
            validator_class().check_schema(schema)
            output_schema = schema
        owner = f"tool {tool_name!r}"
        definition = mcp_types.Tool(
            name=tool_name,
            title=options.get("title"),
            description=options.get("description") or signature.description,
            input_schema=signature.input_schema,
            output_schema=output_schema,
            annotations=spec_object(
                owner, "annotations", options.get("annotations"), mcp_types.ToolAnnotations
            ),
            icons=spec_objects(owner, "icons", options.get("icons"), mcp_types.Icon),
            meta=json_object(owner, "meta", options.get("meta")),
        )
        check_definition(owner, definition)
        legacy = attrs.evolve(definition, title=None, output_schema=None, icons=None, meta=None)
        task_support = options.get("task_support", "forbidden")
        if task_support not in ("forbidden", "optional", "required"):
            raise ValueError(
                f"tool {tool_name!r}: task_support must be 'forbidden', 'optional' or"
                f" 'required', not {task_support!r}"
            )
        defer_task = bool(options.get("defer_task", False))
        if defer_task and task_support == "forbidden":
            raise ValueError(f"tool {tool_name!r}: defer_task needs task support")
        tasks_definition = None
        if task_support != "forbidden":
            execution = mcp_types.ToolExecution(task_support=task_support)
            tasks_definition = attrs.evolve(definition, execution=execution)
        return cls(
            name=tool_name,
            fn=fn,
            signature=signature,
            definition=definition,
            legacy_definition=legacy,
            output_schema=output_schema,
            wrap_output=wrap,
            output_validator=None if output_schema is None else validator_class()(output_schema),
            wants_context=bool(signature.context_parameters),
            is_async=inspect.iscoroutinefunction(fn),
            header_annotations=annotations,
            task_support=task_support,
            defer_task=defer_task,
            tasks_definition=tasks_definition,
            scopes=check_scopes(f"tool {tool_name!r}", options.get("scopes")),
        )

    async def call(self, request: RequestContext, server: ContextServer, arguments: Any) -> Any:
        """Run the tool for one ``tools/call``; return the ``CallToolResult`` (or,
        for a plain string result, the same result as its JSON object).

        Cancellation: see :func:`call_function`.
        """
        try:
            kwargs = self.signature.bind(arguments if arguments is not None else {})
        except ValueError as exc:
            return error_result(f"Invalid arguments for tool {self.name}: {exc}")
        ctx: Context | None = None
        if self.wants_context:
            ctx = Context(request, server)
            for param, kind in self.signature.context_parameters.items():
                kwargs[param] = ctx if kind is Context else request
        try:
            if self.is_async:
                value = await self.fn(**kwargs)
            else:
                value = await call_function(self.fn, kwargs, ctx)
        except ToolError as exc:
            return error_result(str(exc))
        except RPCError:
            raise
        except Exception:
            logger.exception("tool %s failed", self.name)
            return error_result(f"Tool {self.name} failed")
        if self.output_schema is None and type(value) is str:
            # The commonest result, one text block, straight in its wire form:
            # exactly what unstructuring the CallToolResult would give, without
            # building two attrs objects and running cattrs over them.
            return {"content": [{"type": "text", "text": value}]}
        revision = request.revision
        return self.to_result(value, revision is not None and revision.structured_output)

    def to_result(self, value: Any, structured: bool) -> mcp_types.CallToolResult:
        """Turn the tool's return value into a ``CallToolResult``."""
        if self.output_schema is None and type(value) is str:
            # The common case, without to_content's chain of isinstance checks.
            return mcp_types.CallToolResult(content=[mcp_types.TextContent(text=value)])
        if self.output_schema is None or isinstance(value, mcp_types.CallToolResult):
            return to_call_tool_result(value)
        plain = user_converter.unstructure(value)
        # The text is the JSON of the value itself (TL-09); a non-object value
        # is wrapped only in structuredContent (TL-08).
        data = {"result": plain} if self.wrap_output else plain
        errors = list(self.output_validator.iter_errors(data))
        if errors:
            # TL-07: structured results MUST conform; a tool that breaks its
            # own annotation is a bug in the tool, reported as a tool error.
            logger.error(
                "tool %s returned a value outside its outputSchema: %s",
                self.name,
                describe_errors(errors),
            )
            return error_result(f"Tool {self.name} returned an invalid result")
        text = orjson.dumps(plain).decode()
        return mcp_types.CallToolResult(
            content=[mcp_types.TextContent(text=text)],
            structured_content=data if structured else None,
        )


def error_result(message: str) -> mcp_types.CallToolResult:
    """An ``isError`` result with one text block."""
    return mcp_types.CallToolResult(content=[mcp_types.TextContent(text=message)], is_error=True)


def to_content(value: Any) -> list[Any]:
    """Content blocks for a value: strings become text, blocks pass through,
    bytes are refused (use ``ImageContent.from_bytes`` / ``AudioContent.from_bytes``),
    anything else is rendered as JSON text."""
    if isinstance(value, str):
        return [mcp_types.TextContent(text=value)]
    if isinstance(value, CONTENT_TYPES):
        return [value]
    if (
        isinstance(value, list | tuple)
        and value
        and all(isinstance(v, (*CONTENT_TYPES, str)) for v in value)
    ):
        return [mcp_types.TextContent(text=v) if isinstance(v, str) else v for v in value]
    if value is None:
        return []
    if isinstance(value, bytes | bytearray):
        # Which content bytes are (an image? audio? a file?) is the tool's to say.
        raise TypeError(
            "a tool returned bytes without a `-> bytes` annotation: return "
            "ImageContent.from_bytes(...) or AudioContent.from_bytes(...), or annotate it"
        )
    text = orjson.dumps(user_converter.unstructure(value)).decode()
    return [mcp_types.TextContent(text=text)]


def to_call_tool_result(value: Any) -> mcp_types.CallToolResult:
    """A ``CallToolResult`` for an unstructured return value."""
    if isinstance(value, mcp_types.CallToolResult):
        return value
    return mcp_types.CallToolResult(content=to_content(value))


def unknown_tool(name: str) -> RPCError:
    """The -32602 error for a ``tools/call`` of a tool that does not exist (TL-13)."""
    return RPCError(int(ErrorCode.INVALID_PARAMS), f"Unknown tool: {name}")
