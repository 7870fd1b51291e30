"""The spec as data: every method of every revision, both eras, in one table.

The codec types params and results from it, the connection checks direction,
revision and capabilities from it, and the docs are generated from it. A revision
difference is a field of a row, never a branch in session code.

A row's ``revisions`` say where it exists: the handshake-era methods that
2026-07-28 removed (``initialize``, ``ping``, ``logging/setLevel``,
``resources/subscribe``, the server's requests, tasks) list only handshake
versions; ``server/discover`` and ``subscriptions/listen`` only the modern one.

Spec: spec-requirements §26.1 and §26.2 (method tables), LC-11, LC-14, CN-03,
PT-04 (which requests may answer input-required), CA-01 (which are cacheable),
SB-10 (the listen stream).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

import attrs

from .. import types as t
from ._lifecycle import Role
from ._revisions import (
    MODERN_VERSIONS,
    SUPPORTED_VERSIONS,
    V2025_03_26,
    V2025_06_18,
    V2025_11_25,
)


class Kind(enum.Enum):
    """Request (answered) or notification (never answered)."""

    REQUEST = "request"
    NOTIFICATION = "notification"


class Sender(enum.Enum):
    """Who may send a method."""

    CLIENT = "client"
    SERVER = "server"
    BOTH = "both"

    def allows(self, role: Role) -> bool:
        return self is Sender.BOTH or self.value == role.value


# Handshake-era revisions only (the default of a row: what 2026-07-28 removed
# says so by keeping it).
_ALL = frozenset(SUPPORTED_VERSIONS)
_MODERN = frozenset(MODERN_VERSIONS)
# Every revision of both eras.
_EVERY = _ALL | _MODERN
_SINCE_2025_06 = frozenset({V2025_06_18.version, V2025_11_25.version})
_ONLY_2025_11 = frozenset({V2025_11_25.version})
_SINCE_2025_03 = frozenset({V2025_03_26.version, V2025_06_18.version, V2025_11_25.version})


@attrs.frozen
class Capability:
    """A capability that gates a method: who must declare it, and its path.

    ``("resources", "subscribe")`` means ``capabilities.resources.subscribe`` must be
    present and truthy. ``revisions`` limits where the gate applies (completions
    were not a capability before 2025-03-26).
    """

    #: Who must declare it; None means "whoever receives the request" (``tasks/*``,
    #: which go both ways).
    holder: Role | None
    path: tuple[str, ...]
    revisions: frozenset[str] = _EVERY

    def declared_in(self, capabilities: Mapping[str, Any]) -> bool:
        node: Any = capabilities
        for key in self.path:
            # ``type is dict`` first: the ABC check is a Python-level call,
            # and every request's gate is checked.
            if (type(node) is not dict and not isinstance(node, Mapping)) or key not in node:
                return False
            node = node[key]
        return node is not None and node is not False

    def __str__(self) -> str:
        who = self.holder.value if self.holder is not None else "receiver's"
        return f"{who} capability {'.'.join(self.path)!r}"

    def held_by(self, role: Role, *, receiving: bool) -> bool:
        """Whether *role* must declare it (*receiving*: role receives the request)."""
        return self.holder is role if self.holder is not None else receiving


@attrs.frozen
class MethodSpec:
    """One row of :data:`METHODS`."""

    name: str
    kind: Kind
    sender: Sender
    #: attrs class (or union of them) for ``params``; None: no params type. The
    #: table names its types (a string: a name in :mod:`trio_mcp.types`), so
    #: that the modules of methods a server never sees (sampling, elicitation,
    #: prompts...) are imported when a message of one is first typed, not at
    #: start-up; the property returns the type itself.
    _params_type: Any = attrs.field(alias="params_type")
    #: attrs class for the result (requests only); a string as above.
    _result_type: Any = attrs.field(alias="result_type")
    capability: Capability | None = None
    #: Whether ``notifications/cancelled`` may name it (never initialize).
    #:
    #: Spec: CN-03.
    cancellable: bool = True
    revisions: frozenset[str] = _ALL
    #: Whether ``params`` must be present.
    params_required: bool = False
    #: 2026-07-28: may answer with an ``InputRequiredResult``.
    #:
    #: Spec: PT-04.
    input_required: bool = False
    #: 2026-07-28: a complete result carries ``ttlMs`` and ``cacheScope``.
    #:
    #: Spec: CA-01.
    cacheable: bool = False
    #: 2026-07-28: the extension the method belongs to (``tasks/get`` and the
    #: others of ``io.modelcontextprotocol/tasks``): a server that does not
    #: offer it does not have the method (-32601), and a request that does not
    #: declare it in its ``clientCapabilities.extensions`` is refused -32021
    #: before anything else is looked at (SEP-2663). Ignored in the handshake era.
    extension: str | None = None
    #: 2026-07-28: the result type there, where it differs from the handshake
    #: era's (the extension's ``tasks/get`` and ``tasks/cancel``); None: the same.
    _modern_result_type: Any = attrs.field(default=None, alias="modern_result_type")
    #: May be answered with a task when the request asked for one: 2025-11-25,
    #: ``params.task`` (a ``CreateTaskResult``); 2026-07-28, the tasks extension
    #: declared in that request's ``clientCapabilities`` (``resultType: "task"``, a
    #: :class:`~trio_mcp.types.DetailedTask`).
    #:
    #: Spec: TK-11.
    task_augmentable: bool = False
    #: A stream that lasts until one side ends it (``subscriptions/listen``): no request
    #: timeout applies, and a server that abandons it says so with
    #: ``notifications/cancelled`` instead of an error.
    #:
    #: Spec: A-11, SB-10.
    long_lived: bool = False

    @property
    def params_type(self) -> Any:
        return _resolve(self._params_type)

    @property
    def result_type(self) -> Any:
        return _resolve(self._result_type)

    @property
    def modern_result_type(self) -> Any:
        return _resolve(self._modern_result_type)

    def exists_in(self, revision: str | None) -> bool:
        return revision is None or revision in self.revisions

    def gate(self, revision: str | None) -> Capability | None:
        cap = self.capability
        if cap is None or (revision is not None and revision not in cap.revisions):
            return None
        return cap


def _resolve(named: Any) -> Any:
    """The type a row names: a string is looked up in :mod:`trio_mcp.types`,
    which imports the module defining it on first use (PEP 562)."""
    if isinstance(named, str):
        return getattr(t, named)
    return named


def _req(
    name: str,
    sender: Sender,
    params: Any,
    result: Any,
    capability: Capability | None = None,
    **kw: Any,
) -> MethodSpec:
    return MethodSpec(name, Kind.REQUEST, sender, params, result, capability, **kw)


def _note(
    name: str, sender: Sender, params: Any, capability: Capability | None = None, **kw: Any
) -> MethodSpec:
    return MethodSpec(name, Kind.NOTIFICATION, sender, params, None, capability, **kw)


def _srv(*path: str, revisions: frozenset[str] = _EVERY) -> Capability:
    return Capability(Role.SERVER, path, revisions)


def _cli(*path: str) -> Capability:
    return Capability(Role.CLIENT, path)


def _receiver(*path: str) -> Capability:
    return Capability(None, path)


C, S, B = Sender.CLIENT, Sender.SERVER, Sender.BOTH

_ROWS = [
    # Lifecycle (basic/lifecycle)
    _req(
        "initialize",
        C,
        "InitializeRequestParams",
        "InitializeResult",
        cancellable=False,
        params_required=True,
    ),
    _note("notifications/initialized", C, "NotificationParams"),
    # Utilities (basic/utilities)
    _req("ping", B, "RequestParams", "EmptyResult"),
    _note(
        "notifications/cancelled",
        B,
        "CancelledNotificationParams",
        params_required=True,
        revisions=_EVERY,
    ),
    _note(
        "notifications/progress",
        B,
        "ProgressNotificationParams",
        params_required=True,
        revisions=_EVERY,
    ),
    # Discovery and subscriptions (2026-07-28: server/discover, basic/patterns/subscriptions)
    _req(
        "server/discover",
        C,
        "RequestParams",
        "DiscoverResult",
        revisions=_MODERN,
        cacheable=True,
    ),
    _req(
        "subscriptions/listen",
        C,
        "SubscriptionsListenRequestParams",
        "SubscriptionsListenResult",
        revisions=_MODERN,
        params_required=True,
        long_lived=True,
    ),
    _note(
        "notifications/subscriptions/acknowledged",
        S,
        "SubscriptionsAcknowledgedNotificationParams",
        revisions=_MODERN,
        params_required=True,
    ),
    # Tools (server/tools)
    _req(
        "tools/list",
        C,
        "PaginatedRequestParams",
        "ListToolsResult",
        _srv("tools"),
        revisions=_EVERY,
        cacheable=True,
    ),
    _req(
        "tools/call",
        C,
        "CallToolRequestParams",
        "CallToolResult",
        _srv("tools"),
        params_required=True,
        revisions=_EVERY,
        input_required=True,
        task_augmentable=True,
    ),
    _note(
        "notifications/tools/list_changed",
        S,
        "NotificationParams",
        _srv("tools", "listChanged"),
        revisions=_EVERY,
    ),
    # Resources (server/resources)
    _req(
        "resources/list",
        C,
        "PaginatedRequestParams",
        "ListResourcesResult",
        _srv("resources"),
        revisions=_EVERY,
        cacheable=True,
    ),
    _req(
        "resources/templates/list",
        C,
        "PaginatedRequestParams",
        "ListResourceTemplatesResult",
        _srv("resources"),
        revisions=_EVERY,
        cacheable=True,
    ),
    _req(
        "resources/read",
        C,
        "ReadResourceRequestParams",
        "ReadResourceResult",
        _srv("resources"),
        params_required=True,
        revisions=_EVERY,
        input_required=True,
        cacheable=True,
    ),
    _req(
        "resources/subscribe",
        C,
        "SubscribeRequestParams",
        "EmptyResult",
        _srv("resources", "subscribe"),
        params_required=True,
    ),
    _req(
        "resources/unsubscribe",
        C,
        "UnsubscribeRequestParams",
        "EmptyResult",
        _srv("resources", "subscribe"),
        params_required=True,
    ),
    _note(
        "notifications/resources/list_changed",
        S,
        "NotificationParams",
        _srv("resources", "listChanged"),
        revisions=_EVERY,
    ),
    _note(
        "notifications/resources/updated",
        S,
        "ResourceUpdatedNotificationParams",
        _srv("resources", "subscribe"),
        params_required=True,
        revisions=_EVERY,
    ),
    # Prompts (server/prompts)
    _req(
        "prompts/list",
        C,
        "PaginatedRequestParams",
        "ListPromptsResult",
        _srv("prompts"),
        revisions=_EVERY,
        cacheable=True,
    ),
    _req(
        "prompts/get",
        C,
        "GetPromptRequestParams",
        "GetPromptResult",
        _srv("prompts"),
        params_required=True,
        revisions=_EVERY,
        input_required=True,
    ),
    _note(
        "notifications/prompts/list_changed",
        S,
        "NotificationParams",
        _srv("prompts", "listChanged"),
        revisions=_EVERY,
    ),
    # Logging and completion (server/utilities)
    _req(
        "logging/setLevel",
        C,
        "SetLevelRequestParams",
        "EmptyResult",
        _srv("logging"),
        params_required=True,
    ),
    _note(
        "notifications/message",
        S,
        "LoggingMessageNotificationParams",
        _srv("logging"),
        params_required=True,
        revisions=_EVERY,
    ),
    _req(
        "completion/complete",
        C,
        "CompleteRequestParams",
        "CompleteResult",
        _srv("completions", revisions=_SINCE_2025_03 | _MODERN),
        params_required=True,
        revisions=_EVERY,
    ),
    # Client features (client/*)
    _req(
        "sampling/createMessage",
        S,
        "CreateMessageRequestParams",
        "CreateMessageResult",
        _cli("sampling"),
        params_required=True,
        task_augmentable=True,
    ),
    _req("roots/list", S, "RequestParams", "ListRootsResult", _cli("roots")),
    _note(
        "notifications/roots/list_changed", C, "NotificationParams", _cli("roots", "listChanged")
    ),
    _req(
        "elicitation/create",
        S,
        "ElicitRequestParams",
        "ElicitResult",
        _cli("elicitation"),
        revisions=_SINCE_2025_06,
        params_required=True,
        task_augmentable=True,
    ),
    _note(
        "notifications/elicitation/complete",
        S,
        "ElicitationCompleteNotificationParams",
        _cli("elicitation", "url"),
        revisions=_ONLY_2025_11,
        params_required=True,
    ),
    # Tasks (basic/utilities/tasks, 2025-11-25 experimental); the receiver
    # declares. tasks/get and tasks/cancel are also methods of the 2026-07-28
    # extension io.modelcontextprotocol/tasks (same params; tasks/get answers a
    # DetailedTask, tasks/cancel an empty acknowledgement), with tasks/update.
    _req(
        "tasks/get",
        B,
        "GetTaskRequestParams",
        "GetTaskResult",
        Capability(None, ("tasks",), _ONLY_2025_11),
        revisions=_ONLY_2025_11 | _MODERN,
        params_required=True,
        extension=t.TASKS_EXTENSION,
        modern_result_type="DetailedTask",
    ),
    _req(
        "tasks/result",
        B,
        "GetTaskPayloadRequestParams",
        "GetTaskPayloadResult",
        _receiver("tasks"),
        revisions=_ONLY_2025_11,
        params_required=True,
    ),
    _req(
        "tasks/list",
        B,
        "PaginatedRequestParams",
        "ListTasksResult",
        _receiver("tasks", "list"),
        revisions=_ONLY_2025_11,
    ),
    _req(
        "tasks/cancel",
        B,
        "CancelTaskRequestParams",
        "CancelTaskResult",
        Capability(None, ("tasks", "cancel"), _ONLY_2025_11),
        revisions=_ONLY_2025_11 | _MODERN,
        params_required=True,
        extension=t.TASKS_EXTENSION,
        modern_result_type="EmptyResult",
    ),
    _note(
        "notifications/tasks",
        S,
        "TaskNotificationParams",
        revisions=_MODERN,
        params_required=True,
        extension=t.TASKS_EXTENSION,
    ),
    _req(
        "tasks/update",
        C,
        "UpdateTaskRequestParams",
        "EmptyResult",
        revisions=_MODERN,
        params_required=True,
        extension=t.TASKS_EXTENSION,
    ),
    _note(
        "notifications/tasks/status",
        B,
        "TaskStatusNotificationParams",
        revisions=_ONLY_2025_11,
        params_required=True,
    ),
]

#: Every method by name.
METHODS: Mapping[str, MethodSpec] = {row.name: row for row in _ROWS}

#: The params and result type of a custom method that names none: a JSON object.
JSON_OBJECT: Any = dict[str, Any]


def custom_method(
    name: str,
    kind: Kind,
    *,
    params_type: Any = None,
    result_type: Any = None,
    extension: str | None = None,
) -> MethodSpec:
    """The row of a method outside the core set (an application's own, or an
    extension's): in every revision of both eras, either side may send it,
    no capability gates it, its params and result are JSON objects unless a
    type is named (read and written with the connection's converter).
    *extension*: in 2026-07-28, a request must declare that extension in its
    ``clientCapabilities.extensions`` (-32021 otherwise), as the tasks
    extension's methods must.

    Raises:
        ValueError: *name* is a core method (a custom method never redefines one).
    """
    if name in METHODS:
        raise ValueError(f"{name} is a core MCP method; a custom method needs a name of its own")
    if kind is Kind.NOTIFICATION:
        result_type = None
    elif result_type is None:
        result_type = JSON_OBJECT
    return MethodSpec(
        name,
        kind,
        Sender.BOTH,
        JSON_OBJECT if params_type is None else params_type,
        result_type,
        revisions=_EVERY,
        extension=extension,
    )


#: The 2025-11-25 tasks utility's methods that 2026-07-28's extension took
#: over (their rows name no extension: they do not exist in that revision).
_FORERUNNERS: Mapping[str, str] = {
    "tasks/result": t.TASKS_EXTENSION,
    "tasks/list": t.TASKS_EXTENSION,
}


def extension_of(method: str) -> str | None:
    """The extension a core method belongs to (``tasks/get`` belongs to
    ``io.modelcontextprotocol/tasks``, as does its 2025-11-25 forerunner
    ``tasks/result``), or None: only that extension may answer it."""
    spec = METHODS.get(method)
    if spec is not None and spec.extension is not None:
        return spec.extension
    return _FORERUNNERS.get(method)


def lookup(method: str, custom: Mapping[str, MethodSpec]) -> MethodSpec | None:
    """The row of *method*: the core table's, else a custom one of the connection."""
    spec = METHODS.get(method)
    if spec is None and custom:
        spec = custom.get(method)
    return spec


def cancellable(method: str) -> bool:
    """Whether ``notifications/cancelled`` may name a request for *method*
    (every custom method may be cancelled)."""
    spec = METHODS.get(method)
    return spec is None or spec.cancellable


def long_lived(method: str) -> bool:
    """Whether *method* is a stream that lasts until one side ends it (no
    custom method is)."""
    spec = METHODS.get(method)
    return spec is not None and spec.long_lived


def methods_in(revision: str) -> list[MethodSpec]:
    """The methods that exist in *revision*, in table order."""
    return [row for row in _ROWS if revision in row.revisions]
