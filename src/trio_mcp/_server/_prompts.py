"""Prompts: templates of messages with string arguments.

A prompt is a function whose parameters (all strings on the wire) are the
prompt's arguments; parameters without a default are required. Missing
required arguments and unknown arguments are -32602, as is an unknown prompt
(PR-06). The function returns a string (one user message), a
``PromptMessage``, content blocks, a list of those, or a ``GetPromptResult``;
any content type is allowed (PR-05).

Spec: PR-01, PR-05, PR-06, PR-07.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Collection, Mapping
from typing import Any, TypedDict, Unpack

import attrs

from .. import types as mcp_types
from .._errors import RPCError
from .._session import RequestContext
from ..protocol import ErrorCode
from ._context import ContextServer
from ._option_values import check_definition, spec_objects
from ._resources import _context_params, inject_context
from ._schema import parse_docstring
from ._scopes import check_scopes
from ._tools import CONTENT_TYPES, call_function, check_options


def unknown_prompt(name: str) -> RPCError:
    """The -32602 error for an unknown prompt (PR-06)."""
    return RPCError(int(ErrorCode.INVALID_PARAMS), f"Unknown prompt: {name}")


class PromptOptions(TypedDict, total=False):
    """The keyword options of a prompt's registration (:meth:`Server.add_prompt`):
    ``Prompt`` fields; the description defaults to the docstring's summary."""

    title: str | None
    description: str | None
    #: Each icon a ``trio_mcp.types.Icon`` or the spec's JSON form of one.
    icons: list[mcp_types.Icon | Mapping[str, Any]] | None
    #: OAuth scopes a caller's access token must grant to get it (see
    #: ``trio_mcp._server._scopes``).
    scopes: Collection[str] | None


@attrs.frozen
class RegisteredPrompt:
    """A prompt as registered."""

    definition: mcp_types.Prompt
    legacy_definition: mcp_types.Prompt
    fn: Callable[..., Any]
    required: frozenset[str]
    accepted: frozenset[str]
    context_params: dict[str, Any]
    #: The OAuth scopes a caller must hold (``scopes=``).
    scopes: frozenset[str] = frozenset()

    @classmethod
    def from_function(
        cls,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        **options: Unpack[PromptOptions],
    ) -> RegisteredPrompt:
        """Build a prompt from *fn*.

        Raises:
            TypeError: a parameter is ``*args``/``**kwargs`` or annotated with a
                type other than ``str`` (prompt arguments are strings).
        """
        check_options(options, PromptOptions)
        context = _context_params(fn)
        doc, param_docs = parse_docstring(inspect.getdoc(fn))
        hints = inspect.get_annotations(fn, eval_str=True)
        arguments = []
        required = set()
        for pname, param in inspect.signature(fn).parameters.items():
            if pname in context:
                continue
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
                raise TypeError(f"prompt parameter {pname!r} must be a named parameter")
            annotation = hints.get(pname, str)
            if annotation not in (str, str | None):
                raise TypeError(f"prompt parameter {pname!r} must be a str, not {annotation!r}")
            is_required = param.default is inspect.Parameter.empty
            if is_required:
                required.add(pname)
            arguments.append(
                mcp_types.PromptArgument(
                    name=pname, description=param_docs.get(pname), required=is_required
                )
            )
        definition = mcp_types.Prompt(
            name=name or fn.__name__,
            title=options.get("title"),
            description=options.get("description") or doc,
            arguments=arguments,
            icons=spec_objects(
                f"prompt {name or fn.__name__!r}", "icons", options.get("icons"), mcp_types.Icon
            ),
        )
        check_definition(f"prompt {definition.name!r}", definition)
        legacy = attrs.evolve(definition, title=None, icons=None)
        accepted = frozenset(a.name for a in arguments)
        scopes = check_scopes(f"prompt {definition.name!r}", options.get("scopes"))
        return cls(definition, legacy, fn, frozenset(required), accepted, context, scopes)

    async def render(
        self, arguments: dict[str, str] | None, request: RequestContext, server: ContextServer
    ) -> mcp_types.GetPromptResult:
        """Render the prompt.

        Raises:
            RPCError: -32602 for missing required or unknown arguments.

        Cancellation: see :func:`~trio_mcp._server._tools.call_function`.
        """
        args = dict(arguments or {})
        missing = sorted(self.required - set(args))
        if missing:
            raise RPCError(
                int(ErrorCode.INVALID_PARAMS),
                f"Missing required argument(s) for prompt {self.definition.name}: "
                + ", ".join(missing),
            )
        unknown = sorted(set(args) - self.accepted)
        if unknown:
            raise RPCError(
                int(ErrorCode.INVALID_PARAMS),
                f"Unknown argument(s) for prompt {self.definition.name}: " + ", ".join(unknown),
            )
        ctx = inject_context(args, self.context_params, request, server)
        value = await call_function(self.fn, args, ctx)
        if isinstance(value, mcp_types.GetPromptResult):
            return value
        return mcp_types.GetPromptResult(
            description=self.definition.description, messages=to_messages(value)
        )


def to_messages(value: Any) -> list[mcp_types.PromptMessage]:
    """Prompt messages for a returned value (strings and bare content are from the user)."""
    if isinstance(value, mcp_types.PromptMessage):
        return [value]
    if isinstance(value, str):
        return [mcp_types.PromptMessage(role="user", content=mcp_types.TextContent(text=value))]
    if isinstance(value, CONTENT_TYPES):
        return [mcp_types.PromptMessage(role="user", content=value)]
    if isinstance(value, list | tuple):
        return [message for item in value for message in to_messages(item)]
    raise TypeError(f"a prompt function returned {type(value).__name__}")
