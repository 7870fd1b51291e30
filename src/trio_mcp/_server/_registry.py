"""``Server``: a registry of tools, resources, prompts and completions that
answers a session's requests.

The registry does no I/O. It is *run* by ``serve_*`` functions
(:func:`serve_session` for any transport), so one ``Server`` serves many
sessions over many transports at once. Capabilities are derived from what is
registered and from the constructor's options, never declared by hand, so a
feature that was not declared is refused on the wire (the protocol answers
-32601, LC-11). They are fixed per session when it starts: a session that
began with no tools has no ``tools`` capability (pass ``features=("tools",)``
to declare a feature before anything is registered).

Changes while sessions are live (``add_tool``, ``remove_prompt``, ...) queue a
``notifications/*/list_changed`` to every session that negotiated it, and
:meth:`Server.resource_updated` queues ``notifications/resources/updated`` to
the sessions subscribed to that URI (or a parent of it). The registration
methods are synchronous; delivery is done by a small task that
:func:`serve_session` (``trio_mcp._server._serve``) runs next to each session,
so a slow client never blocks the code that changed the registry. Repeated
changes before delivery are
coalesced into one notification.

Both eras are served by one ``Server`` (VR-08, VR-10): each connection's
opening decides its era (see ``trio_mcp.protocol._lifecycle``), and handlers
read what differs from the request's revision (``ctx.revision``). In
2026-07-28 the change notices go to the connections' ``subscriptions/listen``
streams (``trio_mcp._server._subscriptions``) instead of the sessions, inputs
are asked for through input-required rounds (``trio_mcp._server._input``) whose
``requestState`` the server seals (``trio_mcp._server._request_state``), and
every result carries ``resultType``, ``serverInfo`` and, where cacheable, the
cache hints this server declares.

Spec: TL-01, TL-02, RS-01, RS-05, RS-06, PR-01, PR-03, LG-01, CP-01, VR-08,
VR-09, VR-10, DS-01..DS-03, CA-01, ME-11, LG-06, LG-07.
"""

from __future__ import annotations

import logging
import time
import weakref
from collections.abc import Callable, Collection, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, TypeVar, Unpack, overload

import attrs
import trio

from .. import types as mcp_types
from .._errors import RPCError, SessionClosed
from .._extensions._registry import CustomMethods, Extension, Handler
from .._session import Middleware, RequestContext, Session
from .._tasks._extension import tasks_extension
from .._tasks._methods import OwnerOf, TaskMethods
from .._tasks._methods import task_owner as default_task_owner
from .._tasks._runner import TaskRunner
from .._telemetry._switch import TelemetryMode, telemetry_middleware
from .._util import Shared
from ..protocol import (
    ALL_VERSIONS,
    DEFAULT_MAX_MESSAGE_SIZE,
    Connection,
    ErrorCode,
    Kind,
    LocalProtocolError,
    NotificationReceived,
    NotJSON,
    RequestObserver,
    Role,
    TaskForm,
)
from ..protocol._headers import HeaderAnnotation
from ._context import Context
from ._input import MAY_ASK, open_round
from ._lifespan import Lifespan, Lifespans
from ._logging import coerce_level, log_params
from ._pagination import paginate
from ._request_state import RequestStateSealer
from ._scopes import INSUFFICIENT_SCOPE, targets, visible
from ._serve import Peer, serve_session, subscribed
from ._subscriptions import Listeners, listen
from ._task_input import TaskInputRound
from ._tool_tasks import ToolTasks
from ._tools import (
    RegisteredTool,
    ToolError,
    ToolOptions,
    error_result,
    to_call_tool_result,
    unknown_tool,
)

if TYPE_CHECKING:
    from .._bus._base import Bus
    from ._completion import Completer
    from ._prompts import PromptOptions, RegisteredPrompt
    from ._resources import RegisteredResource, RegisteredTemplate, ResourceOptions, TemplateOptions

# Resources, prompts and completion (with the URI templates) are imported by
# the first registration or request of one (their functions below): a server
# of tools only never loads them, some milliseconds of every start-up.

__all__ = [
    "Context",
    "RegisteredTool",
    "Server",
    "ToolError",
    "error_result",
    "serve_session",
    "to_call_tool_result",
]

logger = logging.getLogger("trio_mcp.server")

F = TypeVar("F", bound=Callable[..., Any])

_TOOLS_CHANGED = "notifications/tools/list_changed"
_RESOURCES_CHANGED = "notifications/resources/list_changed"
_PROMPTS_CHANGED = "notifications/prompts/list_changed"
_RESOURCE_UPDATED = "notifications/resources/updated"


class Server:
    """An MCP server: register tools, resources, prompts and completions, then
    serve sessions.

    Example::

        server = Server("demo", version="1.0")

        @server.tool()
        async def add(a: int, b: int) -> int:
            \"\"\"Add two integers.\"\"\"
            return a + b

    Args:
        name: the server's name, sent to clients in ``serverInfo``.
        version: the server's version, sent with its name.
        instructions: how to use the server, for the model; sent in the
            ``initialize`` result.
        title: a human-readable name for hosts to show, sent in ``serverInfo``.
        page_size: items per page of every list method (None: one page).
        list_changed: declare ``listChanged`` for tools, resources and prompts
            and send the notifications.
        subscribe: declare ``resources.subscribe`` (when resources exist).
        logging: declare ``logging`` (log messages from :class:`Context`).
        features: declare these features even when nothing is registered yet
            (any of ``"tools"``, ``"resources"``, ``"prompts"``, ``"completions"``).
        protocol_versions: the revisions served, newest first: both eras by default (a
            dual-era server). Leave out 2026-07-28 for a handshake-only server, or every
            handshake version for a 2026-07-28-only one (``initialize`` is then refused
            with -32022 naming what it speaks).
        cache_hints: 2026-07-28 cache hints ``(ttlMs, cacheScope)`` by method
            (``tools/list``, ``prompts/list``, ``resources/list``,
            ``resources/templates/list``, ``resources/read``, ``server/discover``) for
            complete results that set none; a method not listed gets ``(0, "private")``:
            stale at once and never shared across authorization contexts, the safe
            default.
        server_info_in_results: 2026-07-28: put ``serverInfo`` in every result's
            ``_meta``.
        request_state: seals the ``requestState`` of input-required rounds. The default
            signs with a random key of this process and a 300 s expiry; give every
            worker of a scaled-out server the same :class:`~trio_mcp.RequestStateSealer`
            key.
        tasks: runs the tools registered with ``task_support`` as tasks and
            keeps their records (:class:`~trio_mcp.lowlevel.TaskRunner`; the default
            keeps them in memory). Give every worker of a scaled-out server a
            runner on one shared store.
        task_list: offer 2025-11-25's ``tasks/list``. Off by default: without an
            authorization context every anonymous task would be listed to every
            anonymous client.
        task_owner: the owner of the tasks a request creates and may see (its
            authorization context, any hashable; another owner's task is unknown to it).
            Default: the principal the request's transport names, else None (anonymous:
            the 128-bit task id is all that guards a task).
        filter_lists_by_scope: leave out of ``tools/list``, ``resources/list``,
            ``resources/templates/list`` and ``prompts/list`` the items whose
            ``scopes=`` an authenticated caller's token does not grant. Off by default:
            lists show everything and a call without the scope is refused with a step-up
            challenge (see :meth:`required_scopes`).
        request_history: finished requests each session keeps for
            ``Session.requests()`` (1000).
        remembered_requests: finished requests each session remembers so a peer reusing
            an id while its reply is owed is refused (4096). A remembered request costs
            about 0.4 KiB, so a busy session holds up to ~1.6 MiB by default, and a
            server's memory grows with its sessions' calls until each is at the bound:
            lower both for servers with many long sessions.
        lifespan: ``lifespan(server)`` gives an async context manager entered
            once per process (per worker) before serving and left after the
            last session and task end; its value is :attr:`lifespan_state`
            and ``ctx.lifespan`` (see :meth:`running`).
        session_lifespan: ``session_lifespan(session)`` gives an async
            context manager entered for each session :func:`serve_session`
            serves (stdio, WebSocket, a handshake-era HTTP session) and left
            when it ends; its value is ``ctx.session_state``.
        bus: a :class:`~trio_mcp.bus.Bus` shared by every instance: list
            changes and resource updates made on any instance reach the listen
            streams and subscriptions of all (see :mod:`trio_mcp.bus`).
        telemetry: OpenTelemetry (see :doc:`/explanation/telemetry`):
            ``"native"`` (spans and metrics by the MCP semantic conventions,
            trace context read from and written to ``_meta``),
            ``"propagation"`` (trace context only) or ``"off"``. Default: the
            ``TRIO_MCP_TELEMETRY`` environment variable, else ``"native"``
            when the OpenTelemetry API is installed (the ``otel`` extra), a
            no-op until an SDK is configured. Raises :class:`MissingExtra`
            for a mode other than ``"off"`` without the API.
        telemetry_capture: put each ``tools/call``'s arguments and result on
            its spans (``gen_ai.tool.call.arguments``,
            ``gen_ai.tool.call.result``): off by default, as they may hold
            what must not leave the process. Default: the
            ``TRIO_MCP_TELEMETRY_CAPTURE`` environment variable (``1`` or
            ``true`` to capture), else off.

    Spec: CA-01, CA-05, ME-11, ME-14, PT-08..PT-10, TK-18, ST-06, VR-13, BP-04, C-02.
    """

    def __init__(
        self,
        name: str,
        version: str = "0.0.0",
        *,
        instructions: str | None = None,
        title: str | None = None,
        page_size: int | None = None,
        list_changed: bool = True,
        subscribe: bool = True,
        logging: bool = True,
        features: Collection[str] = (),
        protocol_versions: Sequence[str] = ALL_VERSIONS,
        cache_hints: Mapping[str, tuple[int, mcp_types.CacheScope]] | None = None,
        server_info_in_results: bool = True,
        request_state: RequestStateSealer | None = None,
        tasks: TaskRunner | None = None,
        task_list: bool = False,
        task_owner: OwnerOf | None = None,
        filter_lists_by_scope: bool = False,
        request_history: int = 1000,
        remembered_requests: int = 4096,
        lifespan: Lifespan | None = None,
        session_lifespan: Lifespan | None = None,
        bus: Bus | None = None,
        telemetry: TelemetryMode | None = None,
        telemetry_capture: bool | None = None,
    ) -> None:
        if page_size is not None and page_size < 1:
            raise ValueError("page_size must be at least 1")
        if request_history < 0 or remembered_requests < 0:
            raise ValueError("request_history and remembered_requests must be >= 0")
        self.request_history = request_history
        self.remembered_requests = remembered_requests
        self.name = name
        self.version = version
        self.title = title
        self.instructions = instructions
        self.page_size = page_size
        self.list_changed = list_changed
        self.subscribe = subscribe
        self.logging = logging
        self.features = frozenset(features)
        self.protocol_versions = tuple(protocol_versions)
        self.cache_hints = dict(cache_hints or {})
        for method, (ttl, scope) in self.cache_hints.items():
            if not (isinstance(ttl, int) and ttl >= 0) or scope not in ("public", "private"):
                raise ValueError(f"cache hint for {method!r} must be (ttlMs >= 0, public|private)")
        self.server_info_in_results = server_info_in_results
        self.request_state = request_state or RequestStateSealer()
        #: Where this server's tasks run and are kept (see :class:`TaskRunner`).
        self.tasks = tasks if tasks is not None else TaskRunner()
        self.task_list = task_list
        self.filter_lists_by_scope = filter_lists_by_scope
        self._task_methods = TaskMethods(self.tasks, task_owner or default_task_owner)
        self._tool_tasks = ToolTasks(self._task_methods)
        self._listeners = Listeners()
        #: The lifespans, the task runner and the bus relay (see ``_lifespan``).
        self._scopes = Lifespans(
            self, self.tasks, lifespan, session_lifespan, bus, self._deliver, self._resync
        )
        self._tools: dict[str, RegisteredTool] = {}
        self._resources: dict[str, RegisteredResource] = {}
        self._templates: dict[str, RegisteredTemplate] = {}
        self._prompts: dict[str, RegisteredPrompt] = {}
        self._completers: dict[tuple[str, str, str], Completer] = {}
        self._shared_capabilities: Shared[dict[str, Any]] = Shared()
        self._shared_modern: Shared[dict[str, Any]] = Shared()
        self._shared_info: Shared[dict[str, Any]] = Shared()
        self._shared_hints: Shared[dict[str, tuple[int, str]]] = Shared()
        self._peers: weakref.WeakKeyDictionary[Session, Peer] = weakref.WeakKeyDictionary()
        #: The middleware chain, in registration order (see :meth:`add_middleware`).
        self.middleware: list[Middleware] = []
        # Telemetry is the outermost middleware: its span covers what the others do.
        observed = telemetry_middleware(telemetry, "server", capture=telemetry_capture)
        #: The telemetry middleware (None: off), which also times each session.
        self.telemetry = observed
        if observed is not None:
            self.middleware.append(observed)
        # Methods outside the core set, and the extensions installed: the
        # tasks extension first, through the same point as any other.
        self._custom = CustomMethods()
        self._custom.install(
            tasks_extension(self._task_methods, declared_if=lambda: self.has_task_tools)
        )
        self._handlers: dict[str, Callable[[RequestContext], Any]] = {
            "tools/call": self._call_tool,
            "tools/list": self._list_tools,
            "resources/list": self._list_resources,
            "resources/templates/list": self._list_templates,
            "resources/read": self._read_resource,
            "resources/subscribe": self._subscribe,
            "resources/unsubscribe": self._unsubscribe,
            "prompts/list": self._list_prompts,
            "prompts/get": self._get_prompt,
            "completion/complete": self._complete,
            "logging/setLevel": self._set_level,
            "subscriptions/listen": self._listen,
        }

    # ------------------------------------------------------ middleware

    def add_middleware(self, middleware: Middleware) -> None:
        """Add *middleware* to the end of the chain every request and
        notification of every session passes through, both ways (see
        :class:`~trio_mcp.Middleware`): the first added is the outermost.
        Sessions already running keep the chain they started with.

        Raises:
            TypeError: *middleware* is not callable.
        """
        if not callable(middleware):
            raise TypeError(
                "a middleware is a callable that takes a Call and returns an async "
                "context manager, such as an @asynccontextmanager function"
            )
        self.middleware.append(middleware)

    # ------------------------------------- extensions and custom methods

    def add_extension(self, extension: Extension) -> None:
        """Install *extension*: its settings are declared in
        ``capabilities.extensions`` (``initialize`` and ``server/discover``),
        its methods are answered in both eras. Installed whole or not at all.
        Sessions already running keep what they started with.

        Raises:
            ValueError: its identifier is already installed, a dependency is
                not, or one of its methods is a core method or is already
                answered (nothing of it is installed then).
        """
        self._custom.install(extension)

    @property
    def extensions(self) -> Mapping[str, Extension]:
        """The installed extensions, by identifier (read-only)."""
        return self._custom.extensions

    def on_request(
        self, method: str, *, params_type: Any = None, result_type: Any = None
    ) -> Callable[[F], F]:
        """Decorator: answer the custom request *method* (outside the core set)
        with the function, called ``fn(params, ctx)`` (sync or async) with the
        params (a JSON object, or a *params_type* attrs instance) and the
        :class:`~trio_mcp.lowlevel.RequestContext`; it returns the result (a
        JSON object, or an attrs instance of *result_type*). Answered in both
        eras, through the middleware like every request.

        Raises:
            ValueError: *method* is a core method, or is already answered.
        """

        def decorate(fn: F) -> F:
            self._custom.add(Handler(method, Kind.REQUEST, fn, params_type, result_type))
            return fn

        return decorate

    def on_notification(self, method: str, *, params_type: Any = None) -> Callable[[F], F]:
        """Decorator: handle the custom notification *method* with the
        function, called ``fn(params, session)`` (sync or async).

        Raises:
            ValueError: *method* is a core method, or is already handled.
        """

        def decorate(fn: F) -> F:
            self._custom.add(Handler(method, Kind.NOTIFICATION, fn, params_type))
            return fn

        return decorate

    # ----------------------------------------------------------- tools

    @overload
    def tool(self, name: F, /) -> F: ...
    @overload
    def tool(self, name: str | None = None, **options: Unpack[ToolOptions]) -> Callable[[F], F]: ...
    def tool(
        self, name: F | str | None = None, **options: Unpack[ToolOptions]
    ) -> F | Callable[[F], F]:
        """Register a function as a tool: ``@server.tool`` or ``@server.tool(...)``.

        The function may be ``async def`` or a plain ``def`` (run in a worker
        thread, abandoned if the call is cancelled). Its signature is the
        tool's input schema: each parameter a JSON property, required unless it
        has a default, described by the docstring's ``Args:`` section.
        Parameter and return types: ``str``, ``int``, ``float``, ``bool``,
        ``None``, lists, tuples, ``dict[str, T]``, ``Literal``, enums, unions,
        attrs classes, dataclasses, ``TypedDict``, pydantic models, ``datetime``,
        ``date``, ``time``, ``timedelta``, ``bytes``, ``UUID``, ``Path``,
        ``Decimal``, sets (their JSON forms: :meth:`add_tool`). A parameter annotated
        :class:`~trio_mcp.Context` is not an argument: the request's context is
        passed in. Raise :class:`~trio_mcp.ToolError` to answer with a tool
        error (``isError``) that the model can read.

        Example::

            @server.tool(title="Add", annotations={"readOnlyHint": True})
            async def add(a: int, b: int) -> int:
                \"\"\"Add two integers.\"\"\"
                return a + b

        Args:
            name: the tool's name (default: the function's name); 1-128
                characters of ``A-Z a-z 0-9 _ - .``.
            title: a human-readable title for hosts to show.
            description: what the tool does, for the model (default: the
                docstring's first paragraph).
            annotations: hints for the host, a
                :class:`trio_mcp.types.ToolAnnotations` (``read_only_hint``,
                ``destructive_hint``, ``idempotent_hint``, ``open_world_hint``)
                or its JSON form, a dict such as ``{"readOnlyHint": True}``.
            icons: icons for hosts to show, :class:`trio_mcp.types.Icon`
                objects or their JSON form.
            meta: extra ``_meta`` of the tool's definition.
            structured_output: ``None`` (default): an ``outputSchema`` made
                from the return annotation when it has one (an attrs class,
                a ``TypedDict``, a ``dict``, a ``list[int]`` wrapped as
                ``{"result": ...}``); ``False``: never; ``True``: require one.
            input_schema: a JSON Schema of your own, listed and validated
                instead of the one made from the signature.
            task_support: ``"forbidden"`` (default), ``"optional"`` or
                ``"required"``: whether a call may, or must, run as a task.
            defer_task: run the call as a plain request until the handler
                calls ``ctx.start_task()`` (2026-07-28).
            scopes: OAuth scopes a caller's access token must grant to call
                the tool (otherwise HTTP 403 ``insufficient_scope``).

        Returns:
            Used bare, the function itself, unchanged (it can still be called
            directly); called with options, a decorator that registers the
            function and returns it unchanged.

        Raises:
            TypeError: an unsupported parameter or return type, or an
                unknown option.
            ValueError: an invalid tool name.

        Cancellation:
            Registering is synchronous. A call runs in the request's own scope
            and is cancelled with it (the client's ``notifications/cancelled``,
            a timeout, the session's end); a plain ``def`` runs in a worker
            thread, which is abandoned, not interrupted.

        Spec: TL-06, TL-07, TL-10, TL-11.
        """
        if callable(name):
            self.add_tool(name)
            return name

        def decorate(fn: F) -> F:
            self.add_tool(fn, name=name, **options)
            return fn

        return decorate

    def add_tool(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        **options: Unpack[ToolOptions],
    ) -> None:
        """Register *fn* (``async def`` or plain) as a tool.

        The input schema comes from the signature: parameter types, defaults,
        descriptions from the docstring's ``Args:`` section; a parameter
        annotated ``Context`` (or ``RequestContext``) is injected. A structured
        return annotation gives an ``outputSchema`` (``structured_output=False``
        turns that off). Plain functions run in a worker thread that is
        abandoned on cancellation. Replacing an existing tool of the same name
        is allowed.

        Parameter and return types, and their JSON forms: ``str``, ``int``,
        ``float``, ``bool``, ``None``, ``Any``, ``list[T]``, ``tuple[...]``,
        ``dict[str, T]``, ``Literal``, ``Enum`` (its values), unions, attrs
        classes, dataclasses and ``TypedDict`` (objects of their fields),
        pydantic models (the model's own schema; pydantic is never imported
        for other types), ``set[T]``/``frozenset[T]`` (arrays with
        ``uniqueItems``), ``datetime``/``date``/``time`` (ISO 8601 strings with
        ``format``), ``timedelta`` (a number of seconds), ``bytes`` (base64,
        ``contentEncoding: base64``), ``UUID`` and ``Path`` (strings) and
        ``Decimal`` (a string such as ``"12.50"``, exact). An argument that
        does not parse is an ``isError`` result naming it.

        Options that are spec objects (``annotations``, ``icons``) take the
        object or the spec's JSON form (camelCase keys), converted once here;
        the finished definition is serialised once here too, so a bad value
        fails this call and never a session's ``tools/list``.

        A parameter annotated ``Annotated[T, Header("Name")]``
        (:class:`trio_mcp.Header`) is mirrored into the ``Mcp-Param-Name`` header by
        2026-07-28 HTTP clients; ``input_schema=`` gives the tool its own schema instead
        of the generated one (its ``x-mcp-header`` annotations are checked the same
        way). Do not mark secrets: headers are visible to intermediaries.

        ``scopes=["files:write"]`` names the OAuth scopes a caller's access token must
        grant to call it (HTTP 403 ``insufficient_scope`` with the step-up challenge
        otherwise; see :meth:`required_scopes`).

        Args:
            fn: the handler, ``async def`` or plain.
            name: the tool's name (default: the function's name).
            title, description, annotations, icons, meta: as for :meth:`tool`.
            structured_output, input_schema, task_support: as for :meth:`tool`.
            defer_task, scopes: as for :meth:`tool`.

        Cancellation:
            Registering is synchronous. A call of the tool runs in the
            request's own scope: cancelled with the request, and a plain
            function's worker thread is abandoned, not interrupted.

        Raises:
            TypeError: an unsupported parameter type (the message lists what
                is allowed), an ``input_schema`` that does not fit *fn*, an
                option of the wrong type or a dict not in the spec's form (the
                message names the type expected), or a definition with no
                JSON form.
            ValueError: an invalid tool name.
            trio_mcp.protocol.InvalidHeaderAnnotation: an ``x-mcp-header`` that breaks
                the rules for header annotations (the message names the tool, the
                parameter and the reason); the tool is not registered.

        Spec: TL-06, TL-07, TL-10, TL-11, HM-25, HM-26, HM-30, AU-12.
        """
        tool = RegisteredTool.from_function(fn, name=name, **options)
        self._tools[tool.name] = tool
        self._changed(_TOOLS_CHANGED)

    def tool_header_annotations(self, name: str) -> tuple[HeaderAnnotation, ...]:
        """The ``x-mcp-header`` annotations of the tool *name*, in schema order,
        for checking a 2026-07-28 ``tools/call``'s ``Mcp-Param-*`` headers
        against its body.

        Read once when the tool was registered (already checked), never per request;
        empty for a tool without annotations or an unknown one (a call of an unknown
        tool fails on its own, -32602). Synchronous and without checkpoints.

        Spec: HM-25, HM-28, HM-26.
        """
        tool = self._tools.get(name)
        return () if tool is None else tool.header_annotations

    def remove_tool(self, name: str) -> None:
        """Unregister a tool. Raises ``KeyError`` if there is none of that name."""
        del self._tools[name]
        self._changed(_TOOLS_CHANGED)

    # -------------------------------------------------------- resources

    def resource(self, uri: str, **options: Unpack[ResourceOptions]) -> Callable[[F], F]:
        """Register a function as the resource *uri*: ``@server.resource(uri, ...)``.

        The function takes no arguments (except an optional
        :class:`~trio_mcp.Context`) and returns the resource's contents:
        ``str`` (text), ``bytes`` (sent base64), resource contents from
        :mod:`trio_mcp.types`, or a list of those. For URIs with variables
        (``note://{name}``) use :meth:`resource_template`.

        Example::

            @server.resource("config://app", mime_type="application/json")
            async def app_config() -> str:
                return '{"theme": "dark"}'

        Args:
            uri: the resource's URI; it must have a scheme.
            name: its name (default: the function's name).
            title: a human-readable title for hosts to show.
            description: what it holds (default: the docstring's first
                paragraph).
            mime_type: its MIME type, such as ``"text/plain"``.
            annotations: hints for the host, a
                :class:`trio_mcp.types.Annotations` (audience, priority).
            icons: icons for hosts to show.
            size: its size in bytes, if known.
            scopes: OAuth scopes a caller's access token must grant to read
                or subscribe to it.

        Returns:
            A decorator that registers the function and returns it unchanged.

        Raises:
            ValueError: the URI has no scheme.
            TypeError: the function takes parameters, or an unknown option.

        Cancellation:
            Registering is synchronous. A read runs in the request's own scope
            and is cancelled with it; a plain ``def`` runs in a worker thread,
            which is abandoned, not interrupted.

        Spec: RS-02, RS-04.
        """

        def decorate(fn: F) -> F:
            self.add_resource(uri, fn, **options)
            return fn

        return decorate

    def add_resource(
        self,
        uri: str,
        fn: Callable[..., Any],
        **options: Unpack[ResourceOptions],
    ) -> None:
        """Register *fn* (no parameters but a context) as the resource *uri*.

        It returns ``str`` (text), ``bytes`` (sent base64), resource contents,
        or a list of those.

        ``scopes=`` names the OAuth scopes a caller's token must grant to read
        (or subscribe to) it, as for tools. ``annotations`` and ``icons`` take
        the :mod:`trio_mcp.types` objects or the spec's JSON form
        (``annotations={"audience": ["user"]}``), converted once here.

        Args:
            uri: the resource's URI; it must have a scheme.
            fn: the function that reads it.
            name, title, description, mime_type: as for :meth:`resource`.
            annotations, icons, size, scopes: as for :meth:`resource`.

        Raises:
            ValueError: the URI has no scheme. TypeError: *fn* takes
                parameters, or an option is not of its type (the message names
                the type expected).

        Spec: RS-02, RS-04, RS-14.
        """
        from ._resources import RegisteredResource

        resource = RegisteredResource.from_function(uri, fn, **options)
        self._resources[uri] = resource
        self._changed(_RESOURCES_CHANGED)

    def remove_resource(self, uri: str) -> None:
        """Unregister a resource. Raises ``KeyError`` if there is none."""
        del self._resources[uri]
        self._changed(_RESOURCES_CHANGED)

    def resource_template(
        self, uri_template: str, **options: Unpack[TemplateOptions]
    ) -> Callable[[F], F]:
        """Register a function for an RFC 6570 URI template (decorator form of
        :meth:`add_resource_template`).

        Args:
            uri_template: the template, such as ``note://{name}``.
            name, title, description, mime_type: as for :meth:`resource`.
            annotations, icons, scopes: as for :meth:`resource`.

        Returns:
            A decorator that registers the function and returns it unchanged.
        """

        def decorate(fn: F) -> F:
            self.add_resource_template(uri_template, fn, **options)
            return fn

        return decorate

    def add_resource_template(
        self,
        uri_template: str,
        fn: Callable[..., Any],
        **options: Unpack[TemplateOptions],
    ) -> None:
        """Register *fn* for *uri_template*; its parameters are the template's variables.

        Raising ``KeyError`` or ``FileNotFoundError`` from *fn* answers -32002.

        ``scopes=`` names the OAuth scopes a caller's token must grant to read
        a URI of the template (or complete its variables), as for tools.

        Args:
            uri_template: the template, such as ``note://{name}``.
            fn: the function that reads a URI of it; its parameters are the template's
                variables.
            name, title, description, mime_type: as for :meth:`resource`.
            annotations, icons, scopes: as for :meth:`resource`.

        Raises:
            ValueError: a malformed template, or variables and parameters differ.

        Spec: RS-02, RS-08.
        """
        from ._resources import RegisteredTemplate

        template = RegisteredTemplate.from_function(uri_template, fn, **options)
        self._templates[uri_template] = template
        self._changed(_RESOURCES_CHANGED)

    def remove_resource_template(self, uri_template: str) -> None:
        """Unregister a resource template. Raises ``KeyError`` if there is none."""
        del self._templates[uri_template]
        self._changed(_RESOURCES_CHANGED)

    def resource_updated(self, uri: str) -> None:
        """Queue ``notifications/resources/updated`` for every session subscribed to
        *uri* or to a parent of it, and for every 2026-07-28 listen stream that asked
        for it; with a bus, on every instance. Not a checkpoint; never blocks.

        Spec: RS-06, SB-01.
        """
        fanout = self._scopes.fanout
        if fanout is not None and fanout.active:
            fanout.change(_RESOURCE_UPDATED, uri)
        else:
            self._deliver(_RESOURCE_UPDATED, uri)

    # ---------------------------------------------------------- prompts

    @overload
    def prompt(self, name: F, /) -> F: ...
    @overload
    def prompt(
        self, name: str | None = None, **options: Unpack[PromptOptions]
    ) -> Callable[[F], F]: ...
    def prompt(
        self, name: F | str | None = None, **options: Unpack[PromptOptions]
    ) -> F | Callable[[F], F]:
        """Register a function as a prompt: ``@server.prompt`` or ``@server.prompt(...)``.

        The prompt's arguments are the function's ``str`` parameters (required
        unless they have a default); a :class:`~trio_mcp.Context` parameter is
        passed in. It returns a ``str`` (one user message), a
        :class:`trio_mcp.types.PromptMessage` or content block, a list of
        those, or a :class:`trio_mcp.types.GetPromptResult`.

        Example::

            @server.prompt(title="Summarise")
            async def summarise(text: str) -> str:
                \"\"\"Ask for a summary.\"\"\"
                return f"Summarise this:\\n{text}"

        Args:
            name: the prompt's name (default: the function's name).
            title: a human-readable title for hosts to show.
            description: what the prompt is for (default: the docstring's
                first paragraph).
            icons: icons for hosts to show.
            scopes: OAuth scopes a caller's access token must grant to get
                or complete it.

        Returns:
            Used bare, the function itself, unchanged; called with options, a
            decorator that registers the function and returns it unchanged.

        Raises:
            TypeError: a parameter that is not a ``str``, or an unknown option.

        Spec: PR-01, PR-05.
        """
        if callable(name):
            self.add_prompt(name)
            return name

        def decorate(fn: F) -> F:
            self.add_prompt(fn, name=name, **options)
            return fn

        return decorate

    def add_prompt(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        **options: Unpack[PromptOptions],
    ) -> None:
        """Register *fn* as a prompt; its ``str`` parameters are the arguments
        (required unless they have a default).

        ``scopes=`` names the OAuth scopes a caller's token must grant to get
        (or complete) it, as for tools.

        Args:
            fn: the function that renders the prompt.
            name: the prompt's name (default: the function's name).
            title, description, icons, scopes: as for :meth:`prompt`.

        Spec: PR-01, PR-05, PR-06.
        """
        from ._prompts import RegisteredPrompt

        prompt = RegisteredPrompt.from_function(fn, name=name, **options)
        self._prompts[prompt.definition.name] = prompt
        self._changed(_PROMPTS_CHANGED)

    def remove_prompt(self, name: str) -> None:
        """Unregister a prompt. Raises ``KeyError`` if there is none."""
        del self._prompts[name]
        self._changed(_PROMPTS_CHANGED)

    # ------------------------------------------------------- completion

    def completion(
        self, *, argument: str, prompt: str | None = None, template: str | None = None
    ) -> Callable[[F], F]:
        """Register a completion function for a prompt argument or template variable.

        Example::

            @server.completion(prompt="greet", argument="language")
            def languages(value: str) -> list[str]:
                return [x for x in LANGUAGES if x.startswith(value)]

        The function takes ``value`` (the partial value) and optionally ``arguments``
        (resolved arguments) and a context; it returns strings or a ``Completion``.

        Spec: CP-01..CP-04.
        """
        if (prompt is None) == (template is None):
            raise ValueError("give exactly one of prompt= or template=")
        key = ("ref/prompt", prompt, argument) if prompt else ("ref/resource", template, argument)

        def decorate(fn: F) -> F:
            from ._completion import Completer

            self._completers[key] = Completer.from_function(fn)  # type: ignore[index]
            return fn

        return decorate

    # ----------------------------------------------------- capabilities

    def capabilities(self) -> dict[str, Any]:
        """The capabilities object this server declares (derived from the registry)."""
        changed = {"listChanged": True} if self.list_changed else {}
        caps: dict[str, Any] = {}
        if self._prompts or "prompts" in self.features:
            caps["prompts"] = dict(changed)
        if self._resources or self._templates or "resources" in self.features:
            caps["resources"] = {**({"subscribe": True} if self.subscribe else {}), **changed}
        if self._tools or "tools" in self.features:
            caps["tools"] = dict(changed)
        if self.logging:
            caps["logging"] = {}
        if self._completers or "completions" in self.features:
            caps["completions"] = {}
        if self.has_task_tools:
            # 2025-11-25's utility (TK-01); modern_capabilities() moves it to
            # the extension.
            caps["tasks"] = {
                **({"list": {}} if self.task_list else {}),
                "cancel": {},
                "requests": {"tools": {"call": {}}},
            }
        extensions = self._custom.declarations(modern=False)
        if extensions:
            caps["extensions"] = extensions
        return caps

    @property
    def has_task_tools(self) -> bool:
        """Whether a registered tool may run as a task."""
        return any(tool.task_support != "forbidden" for tool in self._tools.values())

    def modern_capabilities(self) -> dict[str, Any]:
        """The capabilities ``server/discover`` shows (2026-07-28): those of
        :meth:`capabilities` without the ``tasks`` slot, and the tasks extension in
        ``extensions`` when a tool may run as a task.

        Spec: TK-19.
        """
        caps = self.capabilities()
        # The 2025-11-25 utility's slot: its extension stands for it here.
        caps.pop("tasks", None)
        extensions = self._custom.declarations(modern=True)
        if extensions:
            caps["extensions"] = extensions
        else:
            caps.pop("extensions", None)
        return caps

    def make_protocol(
        self,
        *,
        clock: Callable[[], float] = time.monotonic,
        observer: RequestObserver | None = None,
        progress_interval: float = 0.0,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
    ) -> Connection:
        """A fresh server-side :class:`Connection` for one session, configured
        with the session's settings (a :class:`~trio_mcp.protocol.ConnectionFactory`:
        :func:`~trio_mcp.lowlevel.open_session` calls it with them)."""
        info: dict[str, Any] = {"name": self.name, "version": self.version}
        if self.title is not None:
            info["title"] = self.title
        # Every session declares the same objects while the registry does
        # not change (Shared): made afresh, then dropped for the last equal
        # ones, never a copy per session. Nothing changes them.
        return Connection(
            Role.SERVER,
            capabilities=self._shared_capabilities(self.capabilities()),
            info=self._shared_info(info),
            instructions=self.instructions,
            supported_versions=self.protocol_versions,
            modern_capabilities=self._shared_modern(self.modern_capabilities()),
            cache_hints=self._shared_hints(dict[str, tuple[int, str]](self.cache_hints)),
            result_server_info=self.server_info_in_results,
            clock=clock,
            observer=observer,
            progress_interval=progress_interval,
            max_message_size=max_message_size,
            history=self.request_history,
            remember_ids=self.remembered_requests,
            custom_methods=self._custom.specs() if self._custom else None,
        )

    def run_stdio(self, **options: Any) -> None:
        """Serve this server over stdin/stdout in a fresh Trio run (for scripts).

        Returns on stdin EOF, SIGTERM or Ctrl+C. Options: see
        :func:`trio_mcp.serve_stdio`.

        Cancellation: see :func:`trio_mcp.serve_stdio`.
        """
        # Imported here: a registry that is only served in memory never loads
        # the transports.
        from ._entry import run_stdio

        run_stdio(self, **options)

    def run_http(self, host: str = "127.0.0.1", port: int = 0, **options: Any) -> None:
        """Serve this server over Streamable HTTP at ``/mcp`` in a fresh Trio run.

        Port 0 picks a free port; the address is printed on stderr. Returns on
        Ctrl+C. Options: see :func:`trio_mcp.http_app`.

        Cancellation: see :func:`trio_mcp.run_http`.
        """
        from ._entry import run_http

        run_http(self, host, port, **options)

    def peer_of(self, session: Session) -> Peer:
        """What this server keeps for *session*: its log level, subscriptions
        and queued notices (made on first use, dropped with the session)."""
        peer = self._peers.get(session)
        if peer is None:
            peer = self._peers[session] = Peer()
        return peer

    def _changed(self, method: str) -> None:
        if not self.list_changed:
            return
        fanout = self._scopes.fanout
        if fanout is not None and fanout.active:
            fanout.change(method)
        else:
            self._deliver(method, None)

    def _deliver(self, method: str, uri: str | None) -> None:
        """Push a change to this process's listen streams and sessions."""
        if uri is not None:
            self._listeners.resource_updated(uri)
            for peer in list(self._peers.values()):
                if subscribed(peer.subscriptions, uri):
                    peer.push(_RESOURCE_UPDATED, uri)
            return
        self._listeners.changed(method)
        for session, peer in list(self._peers.items()):
            # A 2026-07-28 connection hears of changes only through its listen
            # streams (SB-01).
            revision = session.protocol.revision
            if not session.closed and (revision is None or not revision.listen_subscriptions):
                peer.push(method)

    def _resync(self) -> None:
        """Changes may have been missed (the bus had a gap): tell every local
        listener and session that each list, and each resource it subscribed
        to, changed, so its client reads them again."""
        if self.list_changed:
            for method in (_TOOLS_CHANGED, _RESOURCES_CHANGED, _PROMPTS_CHANGED):
                self._deliver(method, None)
        self._listeners.resync()
        for peer in list(self._peers.values()):
            for uri in peer.subscriptions:
                peer.push(_RESOURCE_UPDATED, uri)

    def complete_listens(self) -> None:
        """Answer every open ``subscriptions/listen`` stream of this process with
        its ``complete`` result, and any opened later at once (a drain: their
        clients listen again on another instance). Not a checkpoint."""
        self._listeners.completing.set()

    # ------------------------------------------------------- lifespans

    def running(self) -> AbstractAsyncContextManager[None]:
        """Enter what lives once per process: the ``lifespan``, the task
        runner and the bus relay, in that order (left in the reverse order).

        The ``serve_*`` functions enter it (each worker of
        ``serve_http(workers=N)`` once); enter it yourself around sessions
        served with the low-level API. See the how-to on deploying several
        instances behind a load balancer.

        Raises:
            RuntimeError: it is running already.

        Cancellation: leaving the block stops the relay, cancels the tasks
        (cause SHUTDOWN), then leaves the lifespan.
        """
        return self._scopes.running()

    def serving(self) -> AbstractAsyncContextManager[None]:
        """:meth:`running`, unless it runs already (then a no-op): what each
        entry point enters, so the outermost one owns the process's scopes."""
        return self._scopes.serving()

    @property
    def lifespan_state(self) -> Any:
        """What the ``lifespan``'s ``async with`` gave (None without one).

        Raises:
            RuntimeError: the server is not running (see :meth:`running`).
        """
        return self._scopes.state

    def session_state(self, session: Session) -> Any:
        """What the ``session_lifespan`` gave for *session* (None without one)."""
        return self._scopes.session_state(session)

    def session_scope(self, session: Session) -> AbstractAsyncContextManager[Any]:
        """The ``session_lifespan`` of *session*, entered by :func:`serve_session`."""
        return self._scopes.session(session)

    # ------------------------------------------------------------ scopes

    def required_scopes(self, method: str, params: Any) -> frozenset[str]:
        """The OAuth scopes a request of *method* with *params* (raw JSON or
        typed) needs: those its tool, prompt, resource or resource template
        was registered with (``scopes=``); empty for other requests and for an
        unknown name (which fails on its own). A URI that is no static
        resource takes the scopes of the first template that matches it, as
        ``resources/read`` does; a ``subscriptions/listen`` needs those of
        every resource it subscribes to.

        The Streamable HTTP endpoint asks this before a request reaches a
        session, to answer 403 ``insufficient_scope`` (``http_app`` wires
        it); :meth:`handle_request` checks it again for any authenticated
        transport. Synchronous and without checkpoints.

        Spec: AU-12.
        """
        needed: set[str] = set()
        for kind, key in targets(method, params):
            needed |= self._item_scopes(kind, key)
        return frozenset(needed)

    def _item_scopes(self, kind: str, key: str) -> frozenset[str]:
        """The ``scopes=`` of the item *key* of *kind* (see :func:`targets`)."""
        if kind == "tool":
            tool = self._tools.get(key)
            return tool.scopes if tool is not None else frozenset()
        if kind == "prompt":
            prompt = self._prompts.get(key)
            return prompt.scopes if prompt is not None else frozenset()
        if kind == "template":
            template = self._templates.get(key)
            return template.scopes if template is not None else frozenset()
        resource = self._resources.get(key)
        if resource is not None:
            return resource.scopes
        for candidate in list(self._templates.values()):
            if candidate.template.match(key) is not None:
                return candidate.scopes
        return frozenset()

    def _check_scopes(self, ctx: RequestContext) -> None:
        """Refuse a request whose authenticated caller lacks a required scope
        (-32003 with ``data.requiredScopes``); a caller without a token (no
        authorization on its transport) is not checked."""
        granted = _granted(ctx)
        if granted is None:
            return
        needed = self.required_scopes(ctx.method, ctx.params)
        if needed <= granted:
            return
        missing = sorted(needed - granted)
        logger.info("refused %s: the token lacks scopes %s", ctx.method, " ".join(missing))
        raise RPCError(
            INSUFFICIENT_SCOPE,
            "Forbidden: the access token lacks a required scope",
            {"requiredScopes": sorted(needed), "missingScopes": missing},
        )

    def _listed_to(self, ctx: RequestContext) -> frozenset[str] | None:
        """The scopes lists are filtered by for this request (None: no filter)."""
        return _granted(ctx) if self.filter_lists_by_scope else None

    # ---------------------------------------------------------- dispatch

    async def handle_request(self, ctx: RequestContext) -> Any:
        """Answer one request (called by the session in the request's own task).

        Cancellation: the handler runs in the request's cancel scope (see
        :class:`RequestContext`).
        """
        handler = self._handlers.get(ctx.method)
        if handler is None:
            if ctx.method not in self._custom:
                raise RPCError(int(ErrorCode.METHOD_NOT_FOUND), f"Method not found: {ctx.method}")
            # An extension's or a custom method (the tasks/* methods too).
            self._check_scopes(ctx)
            return await self._custom.handle_request(ctx)
        self._check_scopes(ctx)
        params = ctx.params
        if getattr(params, "request_state", None) is not None or getattr(
            params, "input_responses", None
        ):
            # A retry: its requestState is verified before any user code runs
            # (a first round's InputRound is made when the handler first asks).
            revision = ctx.revision
            if revision is not None and revision.input_required and ctx.method in MAY_ASK:
                ctx.user_data = await open_round(ctx, self.request_state)
        return await handler(ctx)

    async def handle_notification(self, session: Session, event: NotificationReceived) -> None:
        """React to a notification from the client (``initialized`` registers the session)."""
        if event.method == "notifications/initialized":
            # Notices queued during the handshake can go out now.
            self.peer_of(session).ready()
        elif self._custom:
            await self._custom.handle_notification(session, event)
        logger.debug("notification %s", event.method)

    async def send_log(
        self,
        session: Session,
        level: mcp_types.LoggingLevel | str,
        data: Any,
        *,
        logger: str | None = None,
        request: RequestContext | None = None,
        meta: dict[str, Any] | None = None,
    ) -> None:
        """Send ``notifications/message`` to *session* if logging is declared and the
        level set for it lets *level* through: the session's (``logging/setLevel``) in
        the handshake era; in 2026-07-28 only for a *request* that asked with
        ``io.modelcontextprotocol/logLevel``, at or above that level, while it runs
        (never on a listen stream) and until the client cancels it: after its
        ``notifications/cancelled`` nothing more is sent for that request, log messages
        included.

        *meta* is the message's ``_meta`` (a 2025-11-25 task's related-task).

        Raises:
            NotJSON: *data* is not JSON (NaN, a lone surrogate, an object JSON
                has no form for), when the message would be sent.

        Cancellation: a checkpoint; if cancelled while the queue is full, nothing is sent.

        Spec: LG-01, LG-02, LG-03, LG-04, LG-06, LG-07, CN-16, TK-13, SI-09.
        """
        wanted = coerce_level(level)
        request_meta = request.request_meta if request is not None else None
        revision = session.protocol.revision
        if request_meta is not None or (revision is not None and revision.request_scoped_logging):
            asked = request_meta.log_level if request_meta is not None else None
            if (
                not self.logging
                or asked is None
                or wanted < coerce_level(asked)
                # A request-scoped message is a message for that request: none
                # once the client cancelled it (a handler's shielded cleanup
                # may still log).
                or (request is not None and not request.may_send)
            ):
                await trio.lowlevel.checkpoint()
                return
        else:
            threshold = self.peer_of(session).log_level
            if not self.logging or (threshold is not None and wanted < threshold):
                await trio.lowlevel.checkpoint()
                return
        params: Any = log_params(wanted, data, logger)
        if meta is not None:
            params = attrs.evolve(params, meta=meta)
        try:
            await session.notify("notifications/message", params)
        except NotJSON:
            raise  # the caller's data: its error to see (H-07)
        except (LocalProtocolError, SessionClosed) as exc:  # e.g. before initialized, or gone
            # (The ``logger`` parameter shadows the module's logger here.)
            logging.getLogger("trio_mcp.server").debug("log message not sent: %s", exc)

    # -- tools

    async def _list_tools(self, ctx: RequestContext) -> mcp_types.ListToolsResult:
        revision = ctx.revision
        modern = revision is not None and revision.structured_output
        with_tasks = revision is not None and revision.tasks_utility
        granted = self._listed_to(ctx)
        tools = [
            (t.tasks_definition or t.definition)
            if with_tasks
            else t.definition
            if modern
            else t.legacy_definition
            for t in self._tools.values()
            if visible(t, granted)
        ]
        page, cursor = paginate("tools", tools, _cursor(ctx.params), self.page_size)
        return mcp_types.ListToolsResult(tools=page, next_cursor=cursor)

    async def _call_tool(self, ctx: RequestContext) -> Any:
        # A CallToolResult, or its JSON object (RegisteredTool.call's fast path).
        params: mcp_types.CallToolRequestParams = ctx.params
        tool = self._tools.get(params.name)
        if tool is None:
            raise unknown_tool(params.name)
        may_be_task = tool.task_support != "forbidden" or (
            # A task asked of a forbidden tool is -32601 where tasks are
            # declared (TK-04), ignored where not (TK-05).
            params.task is not None and self.has_task_tools
        )
        if may_be_task and not isinstance(ctx.user_data, TaskInputRound):
            form = self._tool_tasks.mode(ctx, tool)
            if form is not None and not (tool.defer_task and form is TaskForm.EXTENSION):
                return await self._tool_tasks.start_tool_task(ctx, tool, self, form)
        return await tool.call(ctx, self, params.arguments)

    async def start_task(self, request: RequestContext) -> None:
        """``ctx.start_task()`` of a ``defer_task`` tool: hand the rest of this
        call to a task when it can be one (see :meth:`Context.start_task`).

        Cancellation: a checkpoint; when the task starts, the request ends with
        its ``CreateTaskResult`` and this handler is unwound by ``Cancelled``.
        """
        if isinstance(request.user_data, TaskInputRound) or request.method != "tools/call":
            await trio.lowlevel.checkpoint()
            return
        tool = self._tools.get(request.params.name)
        form = (
            None
            if tool is None or tool.task_support == "forbidden"
            else (self._tool_tasks.mode(request, tool))
        )
        if tool is None or form is None:
            await trio.lowlevel.checkpoint()
            return
        result = await self._tool_tasks.start_tool_task(request, tool, self, form)
        await request.finish_with(result)

    # -- resources

    async def _list_resources(self, ctx: RequestContext) -> mcp_types.ListResourcesResult:
        granted = self._listed_to(ctx)
        items = [r.definition for r in self._resources.values() if visible(r, granted)]
        page, cursor = paginate("resources", items, _cursor(ctx.params), self.page_size)
        return mcp_types.ListResourcesResult(resources=page, next_cursor=cursor)

    async def _list_templates(self, ctx: RequestContext) -> mcp_types.ListResourceTemplatesResult:
        granted = self._listed_to(ctx)
        items = [t.definition for t in self._templates.values() if visible(t, granted)]
        page, cursor = paginate("templates", items, _cursor(ctx.params), self.page_size)
        return mcp_types.ListResourceTemplatesResult(resource_templates=page, next_cursor=cursor)

    async def _read_resource(self, ctx: RequestContext) -> mcp_types.ReadResourceResult:
        revision = ctx.revision
        code = revision.resource_not_found_code if revision is not None else None
        try:
            return await self._read(ctx)
        except RPCError as exc:
            # A resource function may raise the handshake era's -32002: each
            # era gets its own code for "not found".
            if exc.code == ErrorCode.RESOURCE_NOT_FOUND and code is not None and code != exc.code:
                raise RPCError(code, exc.message, exc.data) from None
            raise

    async def _read(self, ctx: RequestContext) -> mcp_types.ReadResourceResult:
        uri = ctx.params.uri
        resource = self._resources.get(uri)
        if resource is not None:
            return await resource.read(ctx, self)
        for template in list(self._templates.values()):
            variables = template.template.match(uri)
            if variables is not None:
                return await template.read(uri, variables, ctx, self)
        from ._resources import resource_not_found

        raise resource_not_found(uri)

    async def _subscribe(self, ctx: RequestContext) -> mcp_types.EmptyResult:
        self.peer_of(ctx.session).subscribe(ctx.params.uri)
        return mcp_types.EmptyResult()

    async def _unsubscribe(self, ctx: RequestContext) -> mcp_types.EmptyResult:
        self.peer_of(ctx.session).unsubscribe(ctx.params.uri)
        return mcp_types.EmptyResult()

    # -- prompts

    async def _list_prompts(self, ctx: RequestContext) -> mcp_types.ListPromptsResult:
        revision = ctx.revision
        modern = revision is not None and revision.display_metadata
        granted = self._listed_to(ctx)
        items = [
            p.definition if modern else p.legacy_definition
            for p in self._prompts.values()
            if visible(p, granted)
        ]
        page, cursor = paginate("prompts", items, _cursor(ctx.params), self.page_size)
        return mcp_types.ListPromptsResult(prompts=page, next_cursor=cursor)

    async def _get_prompt(self, ctx: RequestContext) -> mcp_types.GetPromptResult:
        params: mcp_types.GetPromptRequestParams = ctx.params
        prompt = self._prompts.get(params.name)
        if prompt is None:
            from ._prompts import unknown_prompt

            raise unknown_prompt(params.name)
        return await prompt.render(params.arguments, ctx, self)

    # -- completion and logging

    async def _complete(self, ctx: RequestContext) -> mcp_types.CompleteResult:
        from ._completion import answer_complete

        declared = bool(self._completers) or "completions" in self.features
        return await answer_complete(
            ctx, self, self._prompts, self._templates, self._completers, declared=declared
        )

    async def _listen(self, ctx: RequestContext) -> mcp_types.SubscriptionsListenResult:
        return await listen(ctx, self._listeners, self._task_methods)

    async def _set_level(self, ctx: RequestContext) -> mcp_types.EmptyResult:
        self.peer_of(ctx.session).log_level = ctx.params.level
        return mcp_types.EmptyResult()


def _granted(ctx: RequestContext) -> frozenset[str] | None:
    """The scopes the request's verified access token grants; None when no
    one authenticated its caller (``ctx.auth`` is None)."""
    token = ctx.caller.access_token
    return None if token is None else token.scopes


def _cursor(params: Any) -> str | None:
    return params.cursor if params is not None else None
