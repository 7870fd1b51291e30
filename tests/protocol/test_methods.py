"""The METHODS table is consistent with itself, with the types, and with the spec.

The expected rows below are copied from spec-requirements §26.2 (the legacy
schema's method table) and §26.1 (2026-07-28's), so a drift between the table
and the spec fails here.
"""

from __future__ import annotations

import types
import typing
from typing import Any

import attrs
import pytest

from trio_mcp import types as t
from trio_mcp.protocol import (
    METHODS,
    SUPPORTED_VERSIONS,
    Capability,
    Kind,
    MethodSpec,
    Role,
    Sender,
    methods_in,
)

ALL = frozenset(SUPPORTED_VERSIONS)
MODERN = frozenset({"2026-07-28"})
# In both eras (§26.1 lists them for 2026-07-28 too).
EVERY = ALL | MODERN
SINCE_2025_06 = frozenset({"2025-06-18", "2025-11-25"})
ONLY_2025_11 = frozenset({"2025-11-25"})
REQ, NOTE = Kind.REQUEST, Kind.NOTIFICATION
C, S, B = Sender.CLIENT, Sender.SERVER, Sender.BOTH

#: name -> (kind, sender, gate holder, gate path, revisions), from spec §26.2.
#: Marks a gate declared by whichever side receives the request.
RECEIVER: Any = object()

SPEC_TABLE: dict[str, tuple[Kind, Sender, Any, tuple[str, ...], frozenset[str]]] = {
    "initialize": (REQ, C, None, (), ALL),
    "notifications/initialized": (NOTE, C, None, (), ALL),
    "ping": (REQ, B, None, (), ALL),
    "notifications/cancelled": (NOTE, B, None, (), EVERY),
    "notifications/progress": (NOTE, B, None, (), EVERY),
    "resources/list": (REQ, C, Role.SERVER, ("resources",), EVERY),
    "resources/templates/list": (REQ, C, Role.SERVER, ("resources",), EVERY),
    "resources/read": (REQ, C, Role.SERVER, ("resources",), EVERY),
    "resources/subscribe": (REQ, C, Role.SERVER, ("resources", "subscribe"), ALL),
    "resources/unsubscribe": (REQ, C, Role.SERVER, ("resources", "subscribe"), ALL),
    "notifications/resources/list_changed": (
        NOTE,
        S,
        Role.SERVER,
        ("resources", "listChanged"),
        EVERY,
    ),
    "notifications/resources/updated": (NOTE, S, Role.SERVER, ("resources", "subscribe"), EVERY),
    # §26.1: 2026-07-28 only.
    "server/discover": (REQ, C, None, (), MODERN),
    "subscriptions/listen": (REQ, C, None, (), MODERN),
    "notifications/subscriptions/acknowledged": (NOTE, S, None, (), MODERN),
    "prompts/list": (REQ, C, Role.SERVER, ("prompts",), EVERY),
    "prompts/get": (REQ, C, Role.SERVER, ("prompts",), EVERY),
    "notifications/prompts/list_changed": (NOTE, S, Role.SERVER, ("prompts", "listChanged"), EVERY),
    "tools/list": (REQ, C, Role.SERVER, ("tools",), EVERY),
    "tools/call": (REQ, C, Role.SERVER, ("tools",), EVERY),
    "notifications/tools/list_changed": (NOTE, S, Role.SERVER, ("tools", "listChanged"), EVERY),
    "logging/setLevel": (REQ, C, Role.SERVER, ("logging",), ALL),
    "notifications/message": (NOTE, S, Role.SERVER, ("logging",), EVERY),
    "completion/complete": (REQ, C, Role.SERVER, ("completions",), EVERY),
    "sampling/createMessage": (REQ, S, Role.CLIENT, ("sampling",), ALL),
    "roots/list": (REQ, S, Role.CLIENT, ("roots",), ALL),
    "notifications/roots/list_changed": (NOTE, C, Role.CLIENT, ("roots", "listChanged"), ALL),
    "elicitation/create": (REQ, S, Role.CLIENT, ("elicitation",), SINCE_2025_06),
    "notifications/elicitation/complete": (
        NOTE,
        S,
        Role.CLIENT,
        ("elicitation", "url"),
        ONLY_2025_11,
    ),
    # §26.2: the receiver of a tasks/* request declares `tasks` (holder "receiver").
    # tasks/get and tasks/cancel are also methods of the 2026-07-28 tasks
    # extension (SEP-2663), with tasks/update; their capability gate is the
    # 2025-11-25 one only (the extension is negotiated per request).
    "tasks/get": (REQ, B, RECEIVER, ("tasks",), ONLY_2025_11 | MODERN),
    "tasks/result": (REQ, B, RECEIVER, ("tasks",), ONLY_2025_11),
    "tasks/list": (REQ, B, RECEIVER, ("tasks", "list"), ONLY_2025_11),
    "tasks/cancel": (REQ, B, RECEIVER, ("tasks", "cancel"), ONLY_2025_11 | MODERN),
    "notifications/tasks/status": (NOTE, B, None, (), ONLY_2025_11),
    "tasks/update": (REQ, C, None, (), MODERN),
    "notifications/tasks": (NOTE, S, None, (), MODERN),
}

#: The 2026-07-28 methods of an extension, and which.
EXTENSION_METHODS = {
    "tasks/get": "io.modelcontextprotocol/tasks",
    "tasks/cancel": "io.modelcontextprotocol/tasks",
    "tasks/update": "io.modelcontextprotocol/tasks",
    "notifications/tasks": "io.modelcontextprotocol/tasks",
}

ROWS = list(METHODS.values())


def members(tp: Any) -> list[Any]:
    """The classes of a type or of a union of types."""
    if isinstance(tp, types.UnionType) or typing.get_origin(tp) is typing.Union:
        return list(typing.get_args(tp))
    return [tp]


def is_public_type(cls: Any) -> bool:
    return isinstance(cls, type) and attrs.has(cls) and getattr(t, cls.__name__, None) is cls


def test_table_matches_the_spec_method_list() -> None:
    assert set(METHODS) == set(SPEC_TABLE)


@pytest.mark.spec("TK-19")
def test_extension_methods_name_their_extension_and_gate_only_the_handshake_era() -> None:
    assert {name: row.extension for name, row in METHODS.items() if row.extension} == (
        EXTENSION_METHODS
    )
    for name in EXTENSION_METHODS:
        row = METHODS[name]
        assert "2026-07-28" in row.revisions
        assert row.gate("2026-07-28") is None


@pytest.mark.spec("LC-11", "LC-14")
@pytest.mark.parametrize("spec", ROWS, ids=lambda s: s.name)
def test_row_matches_the_spec(spec: MethodSpec) -> None:
    kind, sender, holder, path, revisions = SPEC_TABLE[spec.name]
    assert METHODS[spec.name] is spec
    assert (spec.kind, spec.sender, spec.revisions) == (kind, sender, revisions)
    if holder is None:
        assert spec.capability is None
    elif holder is RECEIVER:
        assert spec.capability is not None
        assert (spec.capability.holder, spec.capability.path) == (None, path)
        assert spec.capability.held_by(Role.CLIENT, receiving=True)
        assert not spec.capability.held_by(Role.SERVER, receiving=False)
    else:
        assert spec.capability is not None
        assert (spec.capability.holder, spec.capability.path) == (holder, path)


@pytest.mark.parametrize("spec", ROWS, ids=lambda s: s.name)
def test_params_and_result_types_are_public_attrs_classes(spec: MethodSpec) -> None:
    assert members(spec.params_type), spec.name
    for cls in members(spec.params_type):
        assert is_public_type(cls), (spec.name, cls)
    if spec.kind is Kind.NOTIFICATION:
        assert spec.result_type is None
    else:
        assert spec.result_type is not None
        for cls in members(spec.result_type):
            assert is_public_type(cls), (spec.name, cls)
    # The table names its types, resolved on first use: a misspelt one must
    # fail here, not on its first message.
    if spec.modern_result_type is not None:
        for cls in members(spec.modern_result_type):
            assert is_public_type(cls), (spec.name, cls)


@pytest.mark.parametrize("spec", ROWS, ids=lambda s: s.name)
def test_params_required_when_the_params_type_has_required_fields(spec: MethodSpec) -> None:
    required = any(
        field.default is attrs.NOTHING
        for cls in members(spec.params_type)
        for field in attrs.fields(cls)
    )
    if required:
        assert spec.params_required, spec.name
    # (The converse need not hold: notifications/cancelled needs its requestId
    # although the 2025-11-25 type made the field optional.)


def test_params_required_for_cancel_and_progress() -> None:
    assert METHODS["notifications/cancelled"].params_required
    assert METHODS["notifications/progress"].params_required
    assert not METHODS["ping"].params_required
    assert not METHODS["tools/list"].params_required


@pytest.mark.spec("CN-03", "LC-13")
def test_initialize_is_the_only_request_that_cannot_be_cancelled() -> None:
    assert [s.name for s in ROWS if s.kind is Kind.REQUEST and not s.cancellable] == ["initialize"]


@pytest.mark.spec("PI-01")
def test_ping_goes_both_ways_in_every_handshake_revision_without_a_gate() -> None:
    ping = METHODS["ping"]
    assert ping.sender is Sender.BOTH
    assert ping.revisions == ALL
    assert ping.capability is None
    assert not ping.params_required


def test_sender_allows() -> None:
    assert Sender.CLIENT.allows(Role.CLIENT)
    assert not Sender.CLIENT.allows(Role.SERVER)
    assert Sender.SERVER.allows(Role.SERVER)
    assert not Sender.SERVER.allows(Role.CLIENT)
    assert Sender.BOTH.allows(Role.CLIENT)
    assert Sender.BOTH.allows(Role.SERVER)
    assert Role.CLIENT.peer is Role.SERVER
    assert Role.SERVER.peer is Role.CLIENT


# --- revisions ----------------------------------------------------------------------

BASE_24 = {name for name, row in SPEC_TABLE.items() if row[4] in (ALL, EVERY)}


@pytest.mark.spec("LC-11")
@pytest.mark.parametrize(
    ("revision", "expected"),
    [
        ("2024-11-05", BASE_24),
        ("2025-03-26", BASE_24),
        ("2025-06-18", BASE_24 | {"elicitation/create"}),
        (
            "2025-11-25",
            BASE_24
            | {
                "elicitation/create",
                "notifications/elicitation/complete",
                "tasks/get",
                "tasks/result",
                "tasks/list",
                "tasks/cancel",
                "notifications/tasks/status",
            },
        ),
    ],
)
def test_methods_in_each_revision(revision: str, expected: set[str]) -> None:
    rows = methods_in(revision)
    names = [row.name for row in rows]
    assert set(names) == expected
    assert len(names) == len(set(names))
    # Table order is kept.
    assert names == [row.name for row in ROWS if row.name in expected]
    for row in rows:
        assert row.exists_in(revision)


def test_method_counts() -> None:
    assert len(BASE_24) == 24
    assert [len(methods_in(v)) for v in reversed(SUPPORTED_VERSIONS)] == [24, 24, 25, 31]
    # §26.1: ten requests and eight notifications of the core, and the three
    # requests and one notification of the tasks extension.
    assert {row.name for row in methods_in("2026-07-28") if row.extension is None} == {
        "server/discover",
        "completion/complete",
        "prompts/get",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "subscriptions/listen",
        "tools/call",
        "tools/list",
        "notifications/cancelled",
        "notifications/progress",
        "notifications/message",
        "notifications/resources/updated",
        "notifications/resources/list_changed",
        "notifications/tools/list_changed",
        "notifications/prompts/list_changed",
        "notifications/subscriptions/acknowledged",
    }
    assert {row.name for row in methods_in("2026-07-28") if row.extension} == {
        "tasks/get",
        "tasks/update",
        "tasks/cancel",
        "notifications/tasks",
    }
    assert methods_in("1999-01-01") == []


def test_modern_row_flags() -> None:
    """PT-04: only three requests may answer input-required; CA-01: which
    results carry cache hints; SB-10: the listen stream is long-lived."""
    assert {r.name for r in ROWS if r.input_required} == {
        "tools/call",
        "resources/read",
        "prompts/get",
    }
    assert {r.name for r in ROWS if r.cacheable} == {
        "server/discover",
        "tools/list",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
        "resources/read",
    }
    assert {r.name for r in ROWS if r.long_lived} == {"subscriptions/listen"}


@pytest.mark.parametrize("spec", ROWS, ids=lambda s: s.name)
def test_exists_in_unknown_revision_means_before_negotiation(spec: MethodSpec) -> None:
    # Before the handshake the revision is None and every method "exists": the
    # lifecycle rules, not the revision, decide what may be sent then.
    assert spec.exists_in(None)


def test_completions_gate_only_from_2025_03_26() -> None:
    spec = METHODS["completion/complete"]
    assert spec.gate("2024-11-05") is None
    for revision in ("2025-03-26", "2025-06-18", "2025-11-25"):
        assert spec.gate(revision) == Capability(
            Role.SERVER,
            ("completions",),
            frozenset(SUPPORTED_VERSIONS) - {"2024-11-05"} | {"2026-07-28"},
        )
    assert spec.gate(None) is spec.capability


@pytest.mark.parametrize(
    ("capabilities", "path", "declared"),
    [
        ({}, ("tools",), False),
        ({"tools": {}}, ("tools",), True),
        ({"tools": None}, ("tools",), False),
        ({"tools": False}, ("tools",), False),
        ({"tools": {}}, ("tools", "listChanged"), False),
        ({"tools": {"listChanged": False}}, ("tools", "listChanged"), False),
        ({"tools": {"listChanged": True}}, ("tools", "listChanged"), True),
        ({"tools": True}, ("tools", "listChanged"), False),
        ({"elicitation": {"url": {}}}, ("elicitation", "url"), True),
        ({"logging": {}}, ("logging",), True),
    ],
)
def test_capability_declared_in(
    capabilities: dict[str, Any], path: tuple[str, ...], declared: bool
) -> None:
    assert Capability(Role.SERVER, path).declared_in(capabilities) is declared


def test_capability_str_names_holder_and_path() -> None:
    assert str(Capability(Role.CLIENT, ("roots", "listChanged"))) == (
        "client capability 'roots.listChanged'"
    )
