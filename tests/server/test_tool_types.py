"""The types people pass to and return from tools: each with its JSON Schema and
a round trip (a JSON argument in, the Python value the tool receives, the JSON
result out), through the real session engine in memory.

The JSON forms are documented in ``trio_mcp._server._user_types``: ISO 8601
strings for datetime/date/time, seconds for timedelta, base64 for bytes,
strings for UUID, Path and Decimal, arrays with ``uniqueItems`` for sets.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import subprocess
import sys
import textwrap
import uuid
from decimal import Decimal
from pathlib import Path, PurePosixPath
from typing import Any

import jsonschema  # type: ignore[import-untyped]  # no stubs installed
import pydantic
import pytest

from trio_mcp import Server
from trio_mcp import types as t
from trio_mcp.testing import open_memory_client

UTC = dt.UTC


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


@dataclasses.dataclass
class Point:
    x: int
    y: int = 0
    label: str = dataclasses.field(default_factory=str)


@dataclasses.dataclass
class Visit:
    where: Point
    when: dt.datetime
    tags: frozenset[str] = frozenset()


class Owner(pydantic.BaseModel):
    name: str
    since: dt.date


class Pet(pydantic.BaseModel):
    name: str
    owner: Owner
    weight: float | None = None


def _echo_server(annotation: Any, received: list[Any]) -> Server:
    """A server whose tool ``echo(value: annotation) -> annotation`` keeps what
    it received and returns it."""

    async def echo(value: Any) -> Any:
        received.append(value)
        return value

    echo.__annotations__ = {"value": annotation, "return": annotation}
    server = Server("types")
    server.add_tool(echo)
    return server


def _properties(tool: t.Tool) -> dict[str, Any]:
    """The input schema's properties, as plain data."""
    properties: Any = tool.input_schema["properties"]
    return dict(properties)


# (annotation, JSON argument, Python value, JSON result, schema of the value)
CASES: list[tuple[Any, Any, Any, Any, dict[str, Any]]] = [
    (
        dt.datetime,
        "2026-12-07T18:30:00+00:00",
        dt.datetime(2026, 12, 7, 18, 30, tzinfo=UTC),
        "2026-12-07T18:30:00+00:00",
        {"type": "string", "format": "date-time"},
    ),
    (
        dt.datetime,
        "2026-12-07T18:30:00.250Z",
        dt.datetime(2026, 12, 7, 18, 30, 0, 250000, tzinfo=UTC),
        "2026-12-07T18:30:00.250000+00:00",
        {"type": "string", "format": "date-time"},
    ),
    (
        dt.date,
        "2026-12-07",
        dt.date(2026, 12, 7),
        "2026-12-07",
        {"type": "string", "format": "date"},
    ),
    (
        dt.time,
        "18:30:05",
        dt.time(18, 30, 5),
        "18:30:05",
        {"type": "string", "format": "time"},
    ),
    (
        dt.timedelta,
        90.5,
        dt.timedelta(seconds=90.5),
        90.5,
        {"type": "number", "description": "a duration in seconds"},
    ),
    (
        dt.timedelta,
        3600,
        dt.timedelta(hours=1),
        3600,
        {"type": "number", "description": "a duration in seconds"},
    ),
    (
        bytes,
        "aGVsbG8gd29ybGQ=",
        b"hello world",
        "aGVsbG8gd29ybGQ=",
        {"type": "string", "contentEncoding": "base64"},
    ),
    (
        uuid.UUID,
        "123e4567-e89b-12d3-a456-426614174000",
        uuid.UUID("123e4567-e89b-12d3-a456-426614174000"),
        "123e4567-e89b-12d3-a456-426614174000",
        {"type": "string", "format": "uuid"},
    ),
    (
        Path,
        "/srv/data/report.csv",
        Path("/srv/data/report.csv"),
        "/srv/data/report.csv",
        {"type": "string"},
    ),
    (PurePosixPath, "a/b", PurePosixPath("a/b"), "a/b", {"type": "string"}),
    (
        Decimal,
        "12.50",
        Decimal("12.50"),
        "12.50",
        {"type": "string", "pattern": r"^-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?$"},
    ),
    (
        set[str],
        ["pear", "apple"],
        {"apple", "pear"},
        ["apple", "pear"],
        {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
    ),
    (
        frozenset[int],
        [3, 1, 2],
        frozenset({1, 2, 3}),
        [1, 2, 3],
        {"type": "array", "items": {"type": "integer"}, "uniqueItems": True},
    ),
    (Color, "green", Color.GREEN, "green", {"enum": ["red", "green"]}),
    (
        dt.datetime | None,
        None,
        None,
        None,
        {"anyOf": [{"type": "string", "format": "date-time"}, {"type": "null"}]},
    ),
    (
        list[uuid.UUID],
        ["123e4567-e89b-12d3-a456-426614174000"],
        [uuid.UUID("123e4567-e89b-12d3-a456-426614174000")],
        ["123e4567-e89b-12d3-a456-426614174000"],
        {"type": "array", "items": {"type": "string", "format": "uuid"}},
    ),
]


@pytest.mark.parametrize(
    ("annotation", "argument", "value", "result", "schema"),
    CASES,
    ids=[f"{i}-{getattr(c[0], '__name__', c[0])}" for i, c in enumerate(CASES)],
)
@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_a_scalar_type_round_trips(
    annotation: Any, argument: Any, value: Any, result: Any, schema: dict[str, Any], era: str
) -> None:
    received: list[Any] = []
    async with open_memory_client(_echo_server(annotation, received), era=era) as client:
        (tool,) = (await client.list_tools()).tools
        assert _properties(tool)["value"] == schema
        assert tool.output_schema == {
            "type": "object",
            "properties": {"result": schema},
            "required": ["result"],
        }
        jsonschema.Draft202012Validator.check_schema(tool.input_schema)
        answer = await client.call_tool("echo", {"value": argument})
    assert not answer.is_error, answer
    assert received == [value]
    assert type(received[0]) is type(value)
    assert answer.structured_content == {"result": result}


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_a_dataclass_round_trips_with_nested_types(era: str) -> None:
    received: list[Any] = []
    async with open_memory_client(_echo_server(Visit, received), era=era) as client:
        (tool,) = (await client.list_tools()).tools
        assert _properties(tool)["value"] == {
            "type": "object",
            "properties": {
                "where": {
                    "type": "object",
                    "properties": {
                        "x": {"type": "integer"},
                        "y": {"type": "integer"},
                        "label": {"type": "string"},
                    },
                    "required": ["x"],
                },
                "when": {"type": "string", "format": "date-time"},
                "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
            },
            "required": ["where", "when"],
        }
        # An object result is structuredContent itself (not wrapped).
        assert tool.output_schema == _properties(tool)["value"]
        argument = {"where": {"x": 1}, "when": "2026-12-07T08:00:00+01:00", "tags": ["b", "a"]}
        answer = await client.call_tool("echo", {"value": argument})
    assert not answer.is_error, answer
    expected = Visit(
        Point(1),
        dt.datetime(2026, 12, 7, 8, tzinfo=dt.timezone(dt.timedelta(hours=1))),
        frozenset({"a", "b"}),
    )
    assert received == [expected]
    assert answer.structured_content == {
        "where": {"x": 1, "y": 0, "label": ""},
        "when": "2026-12-07T08:00:00+01:00",
        "tags": ["a", "b"],
    }


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_a_pydantic_model_round_trips_with_its_own_schema_inlined(era: str) -> None:
    received: list[Any] = []
    async with open_memory_client(_echo_server(Pet, received), era=era) as client:
        (tool,) = (await client.list_tools()).tools
        schema: Any = _properties(tool)["value"]
        assert "$ref" not in str(schema)
        assert "$defs" not in schema
        assert schema["properties"]["owner"]["properties"]["since"] == {
            "format": "date",
            "title": "Since",
            "type": "string",
        }
        assert schema["required"] == ["name", "owner"]
        jsonschema.Draft202012Validator.check_schema(tool.input_schema)
        argument = {"name": "Rex", "owner": {"name": "Lin", "since": "2024-05-01"}}
        answer = await client.call_tool("echo", {"value": argument})
        refused = await client.call_tool("echo", {"value": {"name": "Rex"}})
    assert not answer.is_error, answer
    assert received == [Pet(name="Rex", owner=Owner(name="Lin", since=dt.date(2024, 5, 1)))]
    assert answer.structured_content == {
        "name": "Rex",
        "owner": {"name": "Lin", "since": "2024-05-01"},
        "weight": None,
    }
    assert refused.is_error
    assert "argument 'value'" in refused.content[0].text  # type: ignore[union-attr]


class Node(pydantic.BaseModel):
    name: str
    children: list[Node] = []


class Even(pydantic.BaseModel):
    n: int

    @pydantic.field_validator("n")
    @classmethod
    def _even(cls, value: int) -> int:
        if value % 2:
            raise ValueError("must be even")
        return value


class Opaque:
    """A class of no JSON form."""


def test_a_recursive_pydantic_model_is_refused_at_registration() -> None:
    async def walk(tree: Node) -> str:
        return tree.name

    with pytest.raises(TypeError, match=r"parameter 'tree': recursive type .*Node"):
        Server("x").add_tool(walk)


@pytest.mark.parametrize(
    ("annotation", "argument", "message"),
    [
        (dt.datetime, "next tuesday", "expected an ISO 8601 date-time"),
        (dt.date, "07/12/2026", "expected an ISO 8601 date"),
        (bytes, "not base64!", "expected base64 text"),
        (uuid.UUID, "1234", "expected a UUID"),
        (Decimal, "12,50", "does not match"),
        (Decimal, 12.5, "is not of type 'string'"),
        (set[str], ["a", "a"], "non-unique elements"),
        (dt.timedelta, "PT5M", "is not of type 'number'"),
    ],
)
async def test_a_value_outside_the_form_is_a_tool_error_naming_the_argument(
    annotation: Any, argument: Any, message: str
) -> None:
    received: list[Any] = []
    async with open_memory_client(_echo_server(annotation, received)) as client:
        answer = await client.call_tool("echo", {"value": argument})
    assert answer.is_error
    text = answer.content[0].text  # type: ignore[union-attr]
    assert text.startswith("Invalid arguments for tool echo: argument 'value'"), text
    assert message in text
    assert received == []


@pytest.mark.parametrize(
    ("annotation", "argument", "message"),
    [
        (
            Visit,
            {"where": {"x": 1}, "when": "tomorrow"},
            "expected an ISO 8601 date-time (2026-12-07T18:30:00Z), not 'tomorrow' @ value.when",
        ),
        (Even, {"n": 3}, "n: Value error, must be even"),
    ],
)
async def test_a_nested_value_that_does_not_convert_is_named_in_one_line(
    annotation: Any, argument: Any, message: str
) -> None:
    async with open_memory_client(_echo_server(annotation, [])) as client:
        answer = await client.call_tool("echo", {"value": argument})
    assert answer.is_error
    assert answer.content == [
        t.TextContent(text=f"Invalid arguments for tool echo: argument 'value': {message}")
    ]


async def test_defaults_are_advertised_in_their_json_form() -> None:
    async def book(
        when: dt.datetime = dt.datetime(2026, 1, 1, tzinfo=UTC),
        length: dt.timedelta = dt.timedelta(minutes=30),
        kinds: frozenset[str] = frozenset({"b", "a"}),
    ) -> str:
        """Book a slot.

        Args:
            length: how long the slot is.
        """
        return f"{when.isoformat()} {length.total_seconds()} {sorted(kinds)}"

    server = Server("x")
    server.add_tool(book)
    async with open_memory_client(server) as client:
        (tool,) = (await client.list_tools()).tools
        answer = await client.call_tool("book", {})
    properties = _properties(tool)
    assert properties["when"]["default"] == "2026-01-01T00:00:00+00:00"
    assert properties["length"] == {
        "type": "number",
        "default": 1800,
        "description": "how long the slot is. (a duration in seconds)",
    }
    assert properties["kinds"]["default"] == ["a", "b"]
    assert answer.content == [t.TextContent(text="2026-01-01T00:00:00+00:00 1800.0 ['a', 'b']")]


def test_any_other_type_is_refused_naming_what_is_allowed() -> None:
    async def bad(data: Opaque) -> str:
        return ""

    with pytest.raises(TypeError) as raised:
        Server("x").add_tool(bad)
    message = str(raised.value)
    assert message.startswith("tool 'bad': parameter 'data': unsupported type ")
    assert "Opaque: use str, int, float, bool, None, Any, list, tuple, set, frozenset" in message
    for allowed in ("datetime", "timedelta", "bytes", "UUID", "Path", "Decimal", "a dataclass"):
        assert allowed in message
    assert message.endswith("a pydantic model, or a union of these")
    assert "\n" not in message


# Run in a fresh interpreter: without pydantic importable (sys.modules[...] =
# None), every other type works, and with it installed none of them imports it.
WITHOUT_PYDANTIC = """
import dataclasses, datetime as dt, sys, uuid
from decimal import Decimal

if sys.argv[1] == "blocked":
    sys.modules["pydantic"] = None
import trio
from trio_mcp import Server
from trio_mcp.testing import open_memory_client

@dataclasses.dataclass
class Slot:
    when: dt.datetime
    price: Decimal
    id: uuid.UUID

server = Server("x")

@server.tool()
async def take(slot: Slot, data: bytes, tags: set[str]) -> Slot:
    assert isinstance(slot.when, dt.datetime) and data == b"hi" and tags == {"a"}
    return slot

async def main():
    async with open_memory_client(server) as client:
        slot = {"when": "2026-12-07T18:30:00+00:00", "price": "9.99",
                "id": "123e4567-e89b-12d3-a456-426614174000"}
        answer = await client.call_tool("take", {"slot": slot, "data": "aGk=", "tags": ["a"]})
        assert answer.structured_content == slot, answer

trio.run(main)
print("pydantic imported:", "pydantic" in sys.modules and sys.modules["pydantic"] is not None)
"""


@pytest.mark.parametrize("pydantic_state", ["blocked", "installed"])
def test_other_types_never_need_or_import_pydantic(pydantic_state: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(WITHOUT_PYDANTIC), pydantic_state],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "pydantic imported: False\n"
