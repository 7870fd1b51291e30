"""Extensions and custom methods: what either role adds to MCP by name.

Theory of operation
-------------------
An :class:`Extension` is an identifier (``vendor.prefix/name``, the prefix in
reverse-DNS form, as 2026-07-28's ``capabilities.extensions`` names them), the
settings object declared under it, the request and notification handlers it
adds, the capabilities it needs the peer to have declared, and the other
extensions it depends on. A :class:`CustomMethods` is one side's table of
methods outside the core set: the server's and the client's each have one.

Registration is checked whole before anything changes: an extension whose
identifier is malformed or taken, one of whose methods is a core method (other
than the core rows that belong to that very extension, as ``tasks/get``
belongs to ``io.modelcontextprotocol/tasks``) or already handled, or whose
dependencies are not installed, is refused with nothing of it installed.

The table gives the connection its rows (:meth:`CustomMethods.specs`, made
with :func:`~trio_mcp.protocol.custom_method`), so the protocol layer accepts,
types and answers these methods like core ones, and it answers them
(:meth:`CustomMethods.handle_request`): a request of an extension whose
required capabilities the peer did not declare is refused first, with -32021
and ``requiredCapabilities`` in 2026-07-28 (where capabilities are declared
per request) and -32601 in the handshake era (where the session's
declarations stand for the whole session).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any, TypeVar, final

import attrs

from .._errors import RPCError
from .._session import RequestContext, Session
from ..protocol import (
    METHODS,
    ErrorCode,
    JSONObject,
    Kind,
    MethodSpec,
    NotificationReceived,
    custom_method,
    extension_of,
)

#: A reverse-DNS prefix (two labels at least), a slash, a name.
_IDENTIFIER = re.compile(
    r"[A-Za-z][A-Za-z0-9-]*(?:\.[A-Za-z0-9][A-Za-z0-9-]*)+/[A-Za-z0-9][A-Za-z0-9._-]*"
)

RequestHandler = Callable[[Any, RequestContext], Any]
NotificationHandler = Callable[[Any, Session], Any]
F = TypeVar("F", bound=Callable[..., Any])


def check_identifier(identifier: str) -> str:
    """*identifier* if it is a well-formed extension identifier.

    Raises:
        ValueError: it is not ``prefix/name`` with a reverse-DNS prefix.
    """
    if not isinstance(identifier, str) or not _IDENTIFIER.fullmatch(identifier):
        raise ValueError(
            f"{identifier!r} is not an extension identifier; use a reverse-DNS prefix, "
            "a slash and a name, such as 'com.example/shout'"
        )
    return identifier


@attrs.frozen
class Handler:
    """One method a side answers: its name, kind, function and types.

    ``params_type`` / ``result_type``: an attrs class read and written with the
    session's converter, or None for a plain JSON object.
    """

    method: str
    kind: Kind
    fn: Callable[..., Any]
    params_type: Any = None
    result_type: Any = None
    #: The identifier of the extension it belongs to (None: a custom method).
    extension: str | None = None


def _check_method(method: str) -> None:
    if not isinstance(method, str) or not method or method.startswith("rpc."):
        raise ValueError(f"{method!r} is not a method name one may define")


def _check_function(fn: object, method: str) -> None:
    if not callable(fn):
        raise TypeError(f"the handler of {method} must be a function")


@final
class Extension:
    """An MCP extension: an identifier, the settings declared under it in
    ``capabilities.extensions``, its methods, the capabilities it requires of
    the peer and the extensions it depends on.

    Example::

        shout = Extension("com.example/shout", {"loud": True})

        @shout.on_request("com.example/shout")
        async def do_shout(params: dict, ctx: RequestContext) -> dict:
            return {"text": params["text"].upper()}

        server.add_extension(shout)

    Args:
        identifier: ``prefix/name``, the prefix in reverse-DNS form.
        settings: the JSON object declared under the identifier (default ``{}``).
        requires: capabilities the peer must have declared for the extension's
            methods to be served, as a capabilities object (a leaf ``{}`` asks
            only for the key): ``{"extensions": {"com.example/shout": {}}}``
            asks the peer to declare this extension too.
        depends_on: identifiers of extensions that must be installed first.
        declared_if: asked each time the capabilities are made: False leaves
            the extension out of them for now (its methods are still
            answered); None: always declared. The tasks extension is declared
            only while a tool may run as a task.
        in_handshake: declared in the handshake era's ``initialize`` too
            (False: only in 2026-07-28, where the tasks extension stands for
            the 2025-11-25 ``tasks`` capability).

    Raises:
        ValueError: a malformed identifier (or one among *depends_on*).
        TypeError: *settings* or *requires* is not a JSON object.
    """

    __slots__ = (
        "_handlers",
        "declared_if",
        "depends_on",
        "identifier",
        "in_handshake",
        "requires",
        "settings",
    )

    def __init__(
        self,
        identifier: str,
        settings: Mapping[str, Any] | None = None,
        *,
        requires: Mapping[str, Any] | None = None,
        depends_on: Iterable[str] = (),
        declared_if: Callable[[], bool] | None = None,
        in_handshake: bool = True,
    ) -> None:
        self.identifier = check_identifier(identifier)
        self.declared_if = declared_if
        self.in_handshake = in_handshake
        if settings is not None and not isinstance(settings, Mapping):
            raise TypeError(f"the settings of {identifier} must be a JSON object")
        if requires is not None and not isinstance(requires, Mapping):
            raise TypeError(f"what {identifier} requires must be a capabilities object")
        self.settings: JSONObject = dict(settings or {})
        self.requires: JSONObject = dict(requires or {})
        self.depends_on = tuple(check_identifier(name) for name in depends_on)
        self._handlers: dict[str, Handler] = {}

    def __repr__(self) -> str:
        return f"Extension({self.identifier!r})"

    @property
    def handlers(self) -> Mapping[str, Handler]:
        """The methods it adds, by name (read-only)."""
        return MappingProxyType(self._handlers)

    def on_request(
        self, method: str, *, params_type: Any = None, result_type: Any = None
    ) -> Callable[[F], F]:
        """Decorator: *method* is a request of this extension, answered by the
        function, called ``fn(params, ctx)`` (sync or async) with the params
        (a JSON object, or a *params_type* instance) and the
        :class:`~trio_mcp.lowlevel.RequestContext`; it returns the result (a
        JSON object or an attrs instance). See :meth:`add_request`."""

        def decorate(fn: F) -> F:
            self.add_request(method, fn, params_type=params_type, result_type=result_type)
            return fn

        return decorate

    def on_notification(self, method: str, *, params_type: Any = None) -> Callable[[F], F]:
        """Decorator: *method* is a notification of this extension, handled by
        the function, called ``fn(params, session)`` (sync or async)."""

        def decorate(fn: F) -> F:
            self.add_notification(method, fn, params_type=params_type)
            return fn

        return decorate

    def add_request(
        self,
        method: str,
        fn: RequestHandler,
        *,
        params_type: Any = None,
        result_type: Any = None,
    ) -> None:
        """Add request *method*, answered by *fn*.

        Raises:
            ValueError: the extension already has *method*.
        """
        self._add(Handler(method, Kind.REQUEST, fn, params_type, result_type, self.identifier))

    def add_notification(
        self, method: str, fn: NotificationHandler, *, params_type: Any = None
    ) -> None:
        """Add notification *method*, handled by *fn*.

        Raises:
            ValueError: the extension already has *method*.
        """
        self._add(Handler(method, Kind.NOTIFICATION, fn, params_type, None, self.identifier))

    def _add(self, handler: Handler) -> None:
        _check_method(handler.method)
        _check_function(handler.fn, handler.method)
        if handler.method in self._handlers:
            raise ValueError(f"{self.identifier} already has a method {handler.method}")
        self._handlers[handler.method] = handler


def missing_capabilities(required: Mapping[str, Any], declared: Mapping[str, Any]) -> JSONObject:
    """What of *required* (a capabilities object) *declared* lacks, in the
    same shape; empty when nothing is missing. A leaf ``{}`` (or any
    non-object) asks only for the key."""
    missing: JSONObject = {}
    for key, wanted in required.items():
        have = declared.get(key) if isinstance(declared, Mapping) else None
        if have is None or have is False:
            missing[key] = wanted
        elif isinstance(wanted, Mapping) and wanted:
            below = missing_capabilities(wanted, have if isinstance(have, Mapping) else {})
            if below:
                missing[key] = below
    return missing


@final
class CustomMethods:
    """One side's methods outside the core set, and its installed extensions.
    Made by ``Server`` and ``Client``; not constructed directly.
    """

    __slots__ = ("_extensions", "_handlers", "_specs")

    def __init__(self) -> None:
        self._handlers: dict[str, Handler] = {}
        self._extensions: dict[str, Extension] = {}
        self._specs: Mapping[str, MethodSpec] | None = None

    def __bool__(self) -> bool:
        return bool(self._handlers) or bool(self._extensions)

    def __contains__(self, method: object) -> bool:
        return method in self._handlers

    @property
    def extensions(self) -> Mapping[str, Extension]:
        """The installed extensions, by identifier, in installation order."""
        return MappingProxyType(self._extensions)

    def declarations(self, *, modern: bool) -> dict[str, JSONObject]:
        """``capabilities.extensions`` in 2026-07-28 (*modern*) or the
        handshake era: each installed extension declared there now, with its
        settings."""
        return {
            name: dict(ext.settings)
            for name, ext in self._extensions.items()
            if (modern or ext.in_handshake) and (ext.declared_if is None or ext.declared_if())
        }

    def add(self, handler: Handler) -> None:
        """Answer *handler*'s method outside any extension.

        Raises:
            ValueError: a core method, or one already answered.
            TypeError: the handler is not callable.
        """
        _check_method(handler.method)
        _check_function(handler.fn, handler.method)
        self._check(handler, None)
        self._handlers[handler.method] = handler
        self._specs = None

    def install(self, extension: Extension) -> None:
        """Install *extension*, whole or not at all.

        Raises:
            ValueError: its identifier is already installed, a dependency is
                not, or one of its methods is a core method (that is not the
                extension's own row) or is already answered; nothing of it is
                installed then.
        """
        name = extension.identifier
        if name in self._extensions:
            raise ValueError(f"the extension {name} is already installed")
        missing = [dep for dep in extension.depends_on if dep not in self._extensions]
        if missing:
            raise ValueError(
                f"the extension {name} depends on {', '.join(missing)}; install "
                f"{'it' if len(missing) == 1 else 'them'} first"
            )
        handlers = list(extension.handlers.values())
        for handler in handlers:
            self._check(handler, name)
        self._extensions[name] = extension
        for handler in handlers:
            self._handlers[handler.method] = handler
        self._specs = None

    def _check(self, handler: Handler, extension: str | None) -> None:
        method = handler.method
        core = METHODS.get(method)
        if core is not None and (extension is None or extension_of(method) != extension):
            raise ValueError(
                f"{method} is a core MCP method; a custom method needs a name of its own"
            )
        if core is not None and core.kind is not handler.kind:
            raise ValueError(f"{method} is a core {core.kind.value}, not a {handler.kind.value}")
        if method in self._handlers:
            owner = self._handlers[method].extension
            raise ValueError(
                f"{method} is already answered"
                + (f" by the extension {owner}" if owner else " by a custom method")
            )

    def specs(self) -> Mapping[str, MethodSpec]:
        """The connection's rows for these methods (those outside the core table)."""
        specs = self._specs
        if specs is None:
            specs = self._specs = MappingProxyType(
                {
                    method: custom_method(
                        method,
                        handler.kind,
                        params_type=handler.params_type,
                        result_type=handler.result_type,
                    )
                    for method, handler in self._handlers.items()
                    if method not in METHODS
                }
            )
        return specs

    async def handle_request(self, ctx: RequestContext) -> Any:
        """Answer *ctx*'s request with its handler (the caller checked that
        there is one).

        Raises:
            RPCError: -32021 (2026-07-28) or -32601 (handshake era) when the
                peer did not declare what the method's extension requires.

        Cancellation: the handler runs in the request's scope.
        """
        handler = self._handlers[ctx.method]
        if handler.extension is not None:
            self._check_required(handler.extension, ctx)
        result = handler.fn(ctx.params, ctx)
        if inspect.isawaitable(result):
            result = await result
        return result

    async def handle_notification(self, session: Session, event: NotificationReceived) -> None:
        """Handle *event* with its handler, if there is one (else nothing).

        Cancellation: runs in the session's notifier (see ``Dispatcher``).
        """
        handler = self._handlers.get(event.method)
        if handler is None or handler.kind is not Kind.NOTIFICATION:
            return
        result = handler.fn(event.params, session)
        if inspect.isawaitable(result):
            await result

    def _check_required(self, name: str, ctx: RequestContext) -> None:
        extension = self._extensions[name]
        if not extension.requires:
            return
        missing = missing_capabilities(extension.requires, ctx.client_capabilities)
        if not missing:
            return
        if ctx.request_meta is not None:
            raise RPCError(
                int(ErrorCode.MISSING_REQUIRED_CLIENT_CAPABILITY),
                f"{ctx.method} needs capabilities this request did not declare "
                f"(the {name} extension requires them)",
                {"requiredCapabilities": missing},
            )
        raise RPCError(
            int(ErrorCode.METHOD_NOT_FOUND),
            f"Method not found: {ctx.method} (the {name} extension needs capabilities "
            "this session did not declare)",
        )
