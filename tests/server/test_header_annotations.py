"""``x-mcp-header`` on the server side: a parameter marked with
``trio_mcp.Header`` is annotated in its tool's ``inputSchema`` (HM-25), an
invalid annotation refuses the tool at registration, for generated and explicit
schemas alike (HM-26), and :meth:`Server.tool_header_annotations` gives the
HTTP endpoint what to check ``Mcp-Param-*`` against (HM-28), read once at
registration. Secret-looking marks are warned about (HM-30).

Sessions run in memory on the autojump clock; events are ordered by what the
raw peer receives, never by sleeping.
"""

from __future__ import annotations

import logging
from typing import Annotated, Any, TypedDict

import attrs
import jsonschema  # type: ignore[import-untyped]  # no stubs installed
import pytest
from server_helpers import open_raw

import trio_mcp
from trio_mcp import Header, MCPError, Server
from trio_mcp._server._schema import FunctionSignature
from trio_mcp.protocol import HeaderAnnotation, InvalidHeaderAnnotation
from trio_mcp.protocol._headers import SAFE_INTEGER, header_mismatch, request_headers

MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
}
SQL_SCHEMA = {
    "type": "object",
    "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "query": {"type": "string"},
        "limit": {
            "type": "integer",
            "x-mcp-header": "Limit",
            "minimum": -SAFE_INTEGER,
            "maximum": SAFE_INTEGER,
            "default": 10,
        },
        "dry_run": {"type": "boolean", "x-mcp-header": "Dry-Run", "default": False},
        "zone": {"type": "string", "x-mcp-header": "Zone"},
    },
    "additionalProperties": False,
    "required": ["region", "query"],
}


def sql_server() -> Server:
    server = Server("headers")

    @server.tool()
    async def execute_sql(
        region: Annotated[str, Header("Region")],
        query: str,
        limit: Annotated[int, Header("Limit")] = 10,
        dry_run: Annotated[bool, Header("Dry-Run")] = False,
        zone: Annotated[str | None, Header("Zone")] = None,
    ) -> str:
        return f"{region} {query} {limit} {dry_run} {zone}"

    return server


def test_header_is_exported_at_the_top_level() -> None:
    assert trio_mcp.Header is Header
    assert "Header" in trio_mcp.__all__
    assert Header("Region").name == "Region"


@pytest.mark.spec("HM-25")
@pytest.mark.parametrize("version", ["2025-11-25", "2025-06-18", None], ids=str)
async def test_marked_parameters_are_annotated_in_tools_list_of_both_eras(
    autojump_clock: Any, version: str | None
) -> None:
    # The annotation is part of the schema: listed in every revision (clients
    # outside 2026-07-28 HTTP ignore it).
    async with open_raw(sql_server(), version=version) as (peer, _):
        params = {"_meta": META} if version is None else None
        result = (await peer.request("tools/list", params))["result"]
    (tool,) = result["tools"]
    assert tool["inputSchema"] == SQL_SCHEMA
    jsonschema.Draft202012Validator.check_schema(tool["inputSchema"])


@pytest.mark.spec("HM-25")
async def test_a_marked_tool_is_called_as_before(autojump_clock: Any) -> None:
    async with open_raw(sql_server()) as (peer, _):
        plain = await peer.wait_response(
            await peer.call_tool("execute_sql", {"region": "us-west1", "query": "SELECT 1"})
        )
        full = await peer.wait_response(
            await peer.call_tool(
                "execute_sql",
                {"region": "eu", "query": "q", "limit": 3, "dry_run": True, "zone": "b"},
            )
        )
        # Past the range a header can carry: refused as an invalid argument.
        huge = await peer.wait_response(
            await peer.call_tool("execute_sql", {"region": "eu", "query": "q", "limit": 2**53})
        )
        # A marked Optional parameter may be left out, not sent as null.
        null = await peer.wait_response(
            await peer.call_tool("execute_sql", {"region": "eu", "query": "q", "zone": None})
        )
    assert plain["result"]["content"][0]["text"] == "us-west1 SELECT 1 10 False None"
    assert full["result"]["content"][0]["text"] == "eu q 3 True b"
    assert huge["result"]["isError"] is True
    assert "'limit'" in huge["result"]["content"][0]["text"]
    assert null["result"]["isError"] is True
    assert "'zone'" in null["result"]["content"][0]["text"]


@attrs.frozen
class Options:
    dry_run: Annotated[bool, Header("Dry-Run")]
    limit: int = 5


class Target(TypedDict):
    region: Annotated[str, Header("Region")]
    shard: int


@pytest.mark.spec("HM-25", "HM-26")
async def test_marks_on_fields_of_nested_objects_are_reachable_through_properties(
    autojump_clock: Any,
) -> None:
    server = Server("nested")

    @server.tool()
    async def deploy(target: Target, options: Options) -> str:
        return f"{target['region']} {options.dry_run}"

    assert server.tool_header_annotations("deploy") == (
        HeaderAnnotation("Region", ("target", "region"), "string"),
        HeaderAnnotation("Dry-Run", ("options", "dry_run"), "boolean"),
    )
    async with open_raw(server) as (peer, _):
        listed = (await peer.request("tools/list"))["result"]["tools"][0]["inputSchema"]
        answer = await peer.wait_response(
            await peer.call_tool(
                "deploy",
                {"target": {"region": "eu", "shard": 1}, "options": {"dry_run": True}},
            )
        )
    assert listed["properties"]["target"]["properties"]["region"] == {
        "type": "string",
        "x-mcp-header": "Region",
    }
    assert listed["properties"]["options"]["properties"]["dry_run"] == {
        "type": "boolean",
        "x-mcp-header": "Dry-Run",
    }
    assert answer["result"]["content"][0]["text"] == "eu True"


@attrs.frozen
class Marked:
    key: Annotated[str, Header("Key")]


async def _number(x: Annotated[float, Header("X")]) -> None: ...
async def _array(x: Annotated[list[str], Header("X")]) -> None: ...
async def _object(x: Annotated[dict[str, int], Header("X")]) -> None: ...
async def _null(x: Annotated[None, Header("X")]) -> None: ...
async def _in_items(x: list[Annotated[str, Header("X")]]) -> None: ...
async def _in_union(x: Annotated[str, Header("X")] | int) -> None: ...
async def _optional_object(x: Marked | None = None) -> None: ...
async def _empty(x: Annotated[str, Header("")]) -> None: ...
async def _space(x: Annotated[str, Header("My Region")]) -> None: ...
async def _colon(x: Annotated[str, Header("Region:")]) -> None: ...
async def _crlf(x: Annotated[str, Header("A\r\nX-Evil: 1")]) -> None: ...
async def _control(x: Annotated[str, Header("A\x01")]) -> None: ...
async def _non_ascii(x: Annotated[str, Header("Région")]) -> None: ...
async def _duplicate(
    a: Annotated[str, Header("Region")], b: Annotated[str, Header("REGION")]
) -> None: ...


@pytest.mark.spec("HM-26")
@pytest.mark.parametrize(
    ("fn", "parameter", "why"),
    [
        (_number, "x", "'number' property"),
        (_array, "x", "'array' property"),
        (_object, "x", "'object' property"),
        (_null, "x", "'null' property"),
        (_in_items, "x", "not reachable through properties alone"),
        (_in_union, "x", "not reachable through properties alone"),
        (_optional_object, "x", "not reachable through properties alone"),
        (_empty, "x", "non-empty HTTP token"),
        (_space, "x", "non-empty HTTP token"),
        (_colon, "x", "non-empty HTTP token"),
        (_crlf, "x", "non-empty HTTP token"),
        (_control, "x", "non-empty HTTP token"),
        (_non_ascii, "x", "non-empty HTTP token"),
        (_duplicate, "b", "used twice"),
    ],
    ids=lambda v: v.__name__.strip("_") if callable(v) else None,
)
def test_an_invalid_mark_refuses_the_tool_naming_tool_parameter_and_reason(
    fn: Any, parameter: str, why: str
) -> None:
    server = Server("refuses")
    with pytest.raises(InvalidHeaderAnnotation) as caught:
        server.add_tool(fn, name="bad_tool")
    message = str(caught.value)
    assert message.startswith(f"tool 'bad_tool': parameter {parameter!r}: "), message
    assert why in message
    assert caught.value.path[0] == parameter
    # One error root, and still a ValueError for code that catches that.
    assert isinstance(caught.value, MCPError)
    assert isinstance(caught.value, ValueError)
    # Nothing was registered.
    assert server.tool_header_annotations("bad_tool") == ()
    assert "tools" not in server.capabilities()


@pytest.mark.spec("HM-26")
def test_an_optional_marked_primitive_is_plain_and_ints_get_the_header_range() -> None:
    async def fn(
        zone: Annotated[str | None, Header("Zone")] = None,
        count: Annotated[int | None, Header("Count")] = None,
    ) -> None: ...

    signature = FunctionSignature.from_function(fn, context_types=())
    assert signature.input_schema["properties"] == {
        "zone": {"type": "string", "x-mcp-header": "Zone"},
        "count": {
            "type": "integer",
            "x-mcp-header": "Count",
            "minimum": -SAFE_INTEGER,
            "maximum": SAFE_INTEGER,
        },
    }
    # The marks keep the fast argument check, and it stays sound at the bounds.
    check = signature.quick_check
    assert check is not None
    assert check({"zone": "a", "count": SAFE_INTEGER})
    assert check({"count": -SAFE_INTEGER})
    for bad in (2**53, -(2**53), True, 1.5):
        assert not check({"count": bad})
        assert not signature.validator.is_valid({"count": bad})


def test_two_header_marks_on_one_parameter_are_refused() -> None:
    async def fn(x: Annotated[str, Header("A"), Header("B")]) -> None: ...

    with pytest.raises(TypeError, match="tool 'fn': parameter 'x': more than one Header mark"):
        Server("x").add_tool(fn)


# --- explicit input schemas ---------------------------------------------------


async def _sql(region: str, query: str, limit: int = 10, dry_run: bool = False) -> str:
    return f"{region} {query} {limit} {dry_run}"


EXPLICIT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "region": {"type": "string", "description": "where", "x-mcp-header": "Region"},
        "query": {"type": "string"},
        "limit": {"type": "integer", "x-mcp-header": "Limit"},
        "dry_run": {"type": "boolean"},
    },
    "required": ["region", "query"],
    "additionalProperties": False,
}


@pytest.mark.spec("HM-25", "HM-26")
@pytest.mark.parametrize("version", ["2025-11-25", None], ids=str)
async def test_an_explicit_input_schema_is_listed_as_given_and_its_annotations_read(
    autojump_clock: Any, version: str | None
) -> None:
    server = Server("explicit")
    schema = {**EXPLICIT, "properties": dict(EXPLICIT["properties"])}
    server.add_tool(_sql, name="execute_sql", input_schema=schema)
    schema["properties"]["query"] = {"type": "integer"}  # a copy was registered
    assert server.tool_header_annotations("execute_sql") == (
        HeaderAnnotation("Region", ("region",), "string"),
        HeaderAnnotation("Limit", ("limit",), "integer"),
    )
    async with open_raw(server, version=version) as (peer, _):
        params = {"_meta": META} if version is None else {}
        listed = (await peer.request("tools/list", params or None))["result"]["tools"][0]
        answer = await peer.wait_response(
            await peer.send_request(
                "tools/call",
                {"name": "execute_sql", "arguments": {"region": "eu", "query": "q"}, **params},
            )
        )
        wrong = await peer.wait_response(
            await peer.send_request(
                "tools/call",
                {"name": "execute_sql", "arguments": {"region": 1, "query": "q"}, **params},
            )
        )
    assert listed["inputSchema"] == EXPLICIT
    assert answer["result"]["content"][0]["text"] == "eu q 10 False"
    assert answer["result"].get("isError") is not True
    assert wrong["result"]["isError"] is True
    assert "'region'" in wrong["result"]["content"][0]["text"]


@pytest.mark.spec("HM-26")
@pytest.mark.parametrize(
    ("properties", "extra", "parameter", "why"),
    [
        ({"limit": {"type": "number", "x-mcp-header": "Limit"}}, {}, "limit", "'number'"),
        ({"region": {"type": ["string", "null"], "x-mcp-header": "R"}}, {}, "region", "only"),
        (
            {"region": {"anyOf": [{"type": "string"}, {"type": "null"}], "x-mcp-header": "R"}},
            {},
            "region",
            "nullable",
        ),
        ({"region": {"$ref": "#/$defs/r", "x-mcp-header": "R"}}, {}, "region", "None"),
        (
            {"region": {"type": "string", "x-mcp-header": "a"}},
            {"properties": {"limit": {"type": "integer", "x-mcp-header": "A"}}},
            "limit",
            "used twice",
        ),
        (
            {"region": {"allOf": [{"type": "string", "x-mcp-header": "R"}]}},
            {},
            "region",
            "not reachable",
        ),
    ],
    ids=["number", "type-list", "nullable", "ref", "duplicate", "in-allOf"],
)
def test_an_explicit_schema_with_an_invalid_annotation_is_refused(
    properties: dict[str, Any], extra: dict[str, Any], parameter: str, why: str
) -> None:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {**properties, **extra.get("properties", {})},
        "required": ["region", "query"],
        "$defs": {"r": {"type": "string"}},
    }
    schema["properties"].setdefault("query", {"type": "string"})
    server = Server("explicit")
    with pytest.raises(InvalidHeaderAnnotation, match=why) as caught:
        server.add_tool(_sql, input_schema=schema)
    assert str(caught.value).startswith(f"tool '_sql': parameter {parameter!r}: ")
    assert server.tool_header_annotations("_sql") == ()


def test_an_annotation_in_defs_or_at_the_root_names_the_tool_only() -> None:
    for schema in (
        {"type": "object", "x-mcp-header": "Root", "required": ["region", "query"]},
        {
            "type": "object",
            "required": ["region", "query"],
            "$defs": {"r": {"type": "string", "x-mcp-header": "R"}},
        },
    ):
        with pytest.raises(InvalidHeaderAnnotation, match=r"^tool '_sql': x-mcp-header"):
            Server("x").add_tool(_sql, input_schema=schema)


@pytest.mark.parametrize(
    ("schema", "why"),
    [
        ({"type": "array"}, '"type": "object"'),
        ({"type": "object", "properties": {"other": {}}}, "'other' is not a parameter"),
        ({"type": "object", "required": ["region"]}, "parameter 'query': has no default"),
    ],
    ids=["not-object", "unknown-property", "required-missing"],
)
def test_an_explicit_schema_that_does_not_fit_the_function_is_refused(
    schema: dict[str, Any], why: str
) -> None:
    with pytest.raises(TypeError, match=why):
        Server("x").add_tool(_sql, input_schema=schema)


async def test_an_argument_an_open_explicit_schema_lets_through_is_a_tool_error(
    autojump_clock: Any,
) -> None:
    server = Server("open")
    server.add_tool(_sql, input_schema={"type": "object", "required": ["region", "query"]})
    async with open_raw(server) as (peer, _):
        answer = await peer.wait_response(
            await peer.call_tool("_sql", {"region": "eu", "query": "q", "other": 1})
        )
    assert answer["result"]["isError"] is True
    assert "argument 'other': unknown argument" in answer["result"]["content"][0]["text"]


# --- what the HTTP endpoint reads ----------------------------------------------


@pytest.mark.spec("HM-25", "HM-28")
def test_tool_header_annotations_are_read_once_at_registration() -> None:
    server = sql_server()
    found = server.tool_header_annotations("execute_sql")
    assert found == (
        HeaderAnnotation("Region", ("region",), "string"),
        HeaderAnnotation("Limit", ("limit",), "integer"),
        HeaderAnnotation("Dry-Run", ("dry_run",), "boolean"),
        HeaderAnnotation("Zone", ("zone",), "string"),
    )
    assert [a.header for a in found] == [
        "Mcp-Param-Region",
        "Mcp-Param-Limit",
        "Mcp-Param-Dry-Run",
        "Mcp-Param-Zone",
    ]
    # Stored, not recomputed per request.
    assert server.tool_header_annotations("execute_sql") is found
    assert server.tool_header_annotations("nope") == ()

    @server.tool()
    async def plain(text: str) -> str:
        return text

    assert server.tool_header_annotations("plain") == ()
    # Replacing the tool replaces its annotations; removing it drops them.
    server.add_tool(plain, name="execute_sql")
    assert server.tool_header_annotations("execute_sql") == ()
    server.remove_tool("execute_sql")
    assert server.tool_header_annotations("execute_sql") == ()


@pytest.mark.spec("HM-25", "HM-28")
def test_the_annotations_drive_the_header_rules_both_sides_use() -> None:
    annotations = sql_server().tool_header_annotations("execute_sql")
    params = {
        "_meta": META,
        "name": "execute_sql",
        "arguments": {"region": "us-west1", "query": "q", "limit": 7, "zone": "ünï"},
    }
    headers = request_headers("tools/call", params, annotations)
    assert headers["Mcp-Param-Region"] == "us-west1"
    assert headers["Mcp-Param-Limit"] == "7"
    assert headers["Mcp-Param-Zone"].startswith("=?base64?")
    assert "Mcp-Param-Dry-Run" not in headers  # absent argument: no header
    assert header_mismatch(headers, "tools/call", params, annotations) is None
    assert header_mismatch(
        {**headers, "Mcp-Param-Region": "eu"}, "tools/call", params, annotations
    ) == ("Mcp-Param-Region does not match the body's argument")


@pytest.mark.spec("HM-30")
def test_a_secret_looking_mark_is_warned_about(caplog: pytest.LogCaptureFixture) -> None:
    server = Server("secrets")

    async def login(
        user: Annotated[str, Header("User")],
        api_key: Annotated[str, Header("Key")],
        max_tokens: Annotated[int, Header("Max-Tokens")] = 100,
    ) -> None: ...

    async def auth(bearer: Annotated[str, Header("Auth-Token")]) -> None: ...

    with caplog.at_level(logging.WARNING, logger="trio_mcp.server"):
        server.add_tool(login)
        server.add_tool(auth)
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 2, warned
    assert "login mirrors api_key into the Mcp-Param-Key header" in warned[0]
    assert "auth mirrors bearer into the Mcp-Param-Auth-Token header" in warned[1]
    assert all("do not mark secrets" in w for w in warned)
    # A warning, not a refusal: HM-30 is a SHOULD NOT.
    assert len(server.tool_header_annotations("login")) == 3
