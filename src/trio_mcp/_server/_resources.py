"""Resources: static resources, URI templates, reading.

A resource is a function registered for one URI; a resource template is a
function registered for an RFC 6570 URI template, whose variables become its
keyword arguments. ``resources/read`` tries the static resources first (a dict
lookup), then the templates in registration order (each a linear-time match).
A URI nothing matches is -32002 "Resource not found" with the URI in ``data``
(RS-08, handshake era); so is a template function raising :class:`KeyError`
or :class:`FileNotFoundError` for a variable value it does not know.

Results: ``str`` is text contents, ``bytes`` is a base64 blob (RS-15),
resource-contents objects pass through, and a list gives several contents
(RS-04).

Spec: RS-02, RS-04, RS-08, RS-14, RS-15.
"""

from __future__ import annotations

import base64
import inspect
from collections.abc import Callable, Collection, Mapping
from typing import Any, TypedDict, Unpack

import attrs

from .. import types as mcp_types
from .._errors import RPCError
from .._session import RequestContext
from ..protocol import ErrorCode
from ._context import Context, ContextServer
from ._option_values import check_definition, spec_object, spec_objects
from ._schema import parse_docstring
from ._scopes import check_scopes
from ._tools import call_function, check_options
from ._uri_template import UriTemplate

#: Handshake-era "Resource not found" (RS-08).
RESOURCE_NOT_FOUND = int(ErrorCode.RESOURCE_NOT_FOUND)

_CONTEXT_TYPES = (Context, RequestContext)


class TemplateOptions(TypedDict, total=False):
    """The keyword options of a resource template's registration
    (:meth:`Server.add_resource_template`): ``ResourceTemplate`` fields; the
    name defaults to the function's, the description to its docstring's summary."""

    name: str | None
    title: str | None
    description: str | None
    mime_type: str | None
    #: The object or the spec's JSON form (``{"audience": ["user"]}``).
    annotations: mcp_types.Annotations | Mapping[str, Any] | None
    icons: list[mcp_types.Icon | Mapping[str, Any]] | None
    #: OAuth scopes a caller's access token must grant to read it (see
    #: ``trio_mcp._server._scopes``).
    scopes: Collection[str] | None


class ResourceOptions(TemplateOptions, total=False):
    """The keyword options of a resource's registration (:meth:`Server.add_resource`):
    those of a template, and the resource's ``size`` in bytes."""

    size: int | None


def resource_not_found(uri: str) -> RPCError:
    """The -32002 error for an unknown URI (RS-08); the server answers a
    2026-07-28 request with -32602 instead (A-22)."""
    return RPCError(RESOURCE_NOT_FOUND, "Resource not found", {"uri": uri})


def _context_params(fn: Callable[..., Any]) -> dict[str, Any]:
    hints = inspect.get_annotations(fn, eval_str=True)
    return {name: kind for name, kind in hints.items() if kind in _CONTEXT_TYPES}


def inject_context(
    kwargs: dict[str, Any], params: dict[str, Any], request: RequestContext, server: ContextServer
) -> Context | None:
    """Add the context parameters *params* asks for to *kwargs*; return the Context."""
    if not params:
        return None
    ctx = Context(request, server)
    for name, kind in params.items():
        kwargs[name] = ctx if kind is Context else request
    return ctx


@attrs.frozen
class RegisteredResource:
    """A static resource: its ``Resource`` definition and its read function."""

    definition: mcp_types.Resource
    fn: Callable[..., Any]
    context_params: dict[str, Any]
    #: The OAuth scopes a caller must hold (``scopes=``).
    scopes: frozenset[str] = frozenset()

    @classmethod
    def from_function(
        cls, uri: str, fn: Callable[..., Any], **options: Unpack[ResourceOptions]
    ) -> RegisteredResource:
        """Build it; *options* are ``Resource`` fields (name, title, mime_type, ...).

        Raises:
            ValueError: the URI has no scheme (RS-13: URIs follow RFC 3986).
            TypeError: *fn* takes parameters other than a context.
        """
        check_options(options, ResourceOptions)
        _check_uri(uri)
        context = _context_params(fn)
        extra = [p for p in inspect.signature(fn).parameters if p not in context]
        if extra:
            raise TypeError(f"resource {uri!r}: function takes unexpected parameters {extra}")
        owner = f"resource {uri!r}"
        definition = mcp_types.Resource(
            uri=uri,
            name=options.get("name") or fn.__name__,
            title=options.get("title"),
            description=options.get("description") or parse_docstring(inspect.getdoc(fn))[0],
            mime_type=options.get("mime_type"),
            annotations=spec_object(
                owner, "annotations", options.get("annotations"), mcp_types.Annotations
            ),
            size=options.get("size"),
            icons=spec_objects(owner, "icons", options.get("icons"), mcp_types.Icon),
        )
        check_definition(owner, definition)
        scopes = check_scopes(f"resource {uri!r}", options.get("scopes"))
        return cls(definition, fn, context, scopes)

    async def read(
        self, request: RequestContext, server: ContextServer
    ) -> mcp_types.ReadResourceResult:
        """Call the function. Cancellation: see :func:`~trio_mcp._server._tools.call_function`."""
        kwargs: dict[str, Any] = {}
        ctx = inject_context(kwargs, self.context_params, request, server)
        value = await call_function(self.fn, kwargs, ctx)
        return to_read_result(self.definition.uri, value, self.definition.mime_type)


@attrs.frozen
class RegisteredTemplate:
    """A resource template: its definition, parsed template and read function."""

    definition: mcp_types.ResourceTemplate
    template: UriTemplate
    fn: Callable[..., Any]
    context_params: dict[str, Any]
    #: The OAuth scopes a caller must hold (``scopes=``).
    scopes: frozenset[str] = frozenset()

    @classmethod
    def from_function(
        cls, uri_template: str, fn: Callable[..., Any], **options: Unpack[TemplateOptions]
    ) -> RegisteredTemplate:
        """Build it; the template's variables must be exactly *fn*'s parameters.

        Raises:
            ValueError: a malformed template, or variables and parameters differ.
        """
        check_options(options, TemplateOptions)
        template = UriTemplate.parse(uri_template)
        _check_uri(uri_template)
        context = _context_params(fn)
        params = {p for p in inspect.signature(fn).parameters if p not in context}
        if params != set(template.variables):
            raise ValueError(
                f"template {uri_template!r}: variables {sorted(template.variables)} must be the "
                f"function's parameters {sorted(params)}"
            )
        owner = f"template {uri_template!r}"
        definition = mcp_types.ResourceTemplate(
            uri_template=uri_template,
            name=options.get("name") or fn.__name__,
            title=options.get("title"),
            description=options.get("description") or parse_docstring(inspect.getdoc(fn))[0],
            mime_type=options.get("mime_type"),
            annotations=spec_object(
                owner, "annotations", options.get("annotations"), mcp_types.Annotations
            ),
            icons=spec_objects(owner, "icons", options.get("icons"), mcp_types.Icon),
        )
        check_definition(owner, definition)
        scopes = check_scopes(f"template {uri_template!r}", options.get("scopes"))
        return cls(definition, template, fn, context, scopes)

    async def read(
        self, uri: str, variables: dict[str, Any], request: RequestContext, server: ContextServer
    ) -> mcp_types.ReadResourceResult:
        """Call the function with the URI's variables.

        Raises:
            RPCError: -32002 when the function raises ``KeyError`` or
                ``FileNotFoundError`` (the variables name nothing).

        Cancellation: see :func:`~trio_mcp._server._tools.call_function`.
        """
        kwargs = dict(variables)
        ctx = inject_context(kwargs, self.context_params, request, server)
        try:
            value = await call_function(self.fn, kwargs, ctx)
        except (KeyError, FileNotFoundError):
            raise resource_not_found(uri) from None
        return to_read_result(uri, value, self.definition.mime_type)


def _check_uri(uri: str) -> None:
    scheme, colon, _ = uri.partition(":")
    if (
        not colon
        or not scheme
        or not (scheme[0].isalpha() and all(c.isalnum() or c in "+-." for c in scheme))
    ):
        raise ValueError(f"resource URI {uri!r} needs a scheme (RFC 3986)")


def to_contents(uri: str, value: Any, mime_type: str | None) -> list[Any]:
    """Resource contents for one returned value (see the module docstring)."""
    if isinstance(value, mcp_types.TextResourceContents | mcp_types.BlobResourceContents):
        return [value]
    if isinstance(value, str):
        return [
            mcp_types.TextResourceContents(uri=uri, mime_type=mime_type or "text/plain", text=value)
        ]
    if isinstance(value, bytes | bytearray | memoryview):
        blob = base64.b64encode(bytes(value)).decode("ascii")
        return [
            mcp_types.BlobResourceContents(
                uri=uri, mime_type=mime_type or "application/octet-stream", blob=blob
            )
        ]
    if isinstance(value, list):
        return [item for v in value for item in to_contents(uri, v, mime_type)]
    raise TypeError(f"a resource function returned {type(value).__name__}, not str/bytes/contents")


def to_read_result(uri: str, value: Any, mime_type: str | None) -> mcp_types.ReadResourceResult:
    if isinstance(value, mcp_types.ReadResourceResult):
        return value
    return mcp_types.ReadResourceResult(contents=to_contents(uri, value, mime_type))
