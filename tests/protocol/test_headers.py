"""The 2026-07-28 request-metadata headers as pure functions: the sentinel
encoding, the ``x-mcp-header`` annotations, what a client sends and what a
server refuses. The rows use the examples of the spec's Streamable HTTP page."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trio_mcp.protocol import MCPError
from trio_mcp.protocol._headers import (
    HeaderAnnotation,
    HeaderValueError,
    InvalidHeaderAnnotation,
    decode_header_value,
    encode_header_value,
    header_annotations,
    header_mismatch,
    request_headers,
)

META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
SQL_SCHEMA = {
    "type": "object",
    "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "query": {"type": "string"},
    },
}
SQL_PARAMS: dict[str, Any] = {
    "_meta": META,
    "name": "execute_sql",
    "arguments": {"region": "us-west1", "query": "SELECT * FROM users"},
}


@pytest.mark.spec("HM-20")
@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        ("us-west1", "us-west1"),
        ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
        (" padded ", "=?base64?IHBhZGRlZCA=?="),
        ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
        ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
        ("", "=?base64??="),
        ("tab\tinside", "=?base64?dGFiCWluc2lkZQ==?="),
        ("inner space", "inner space"),
    ],
)
def test_the_sentinel_encoding_of_the_spec_examples(value: str, encoded: str) -> None:
    assert encode_header_value(value) == encoded
    assert decode_header_value(encoded) == value


@pytest.mark.spec("HM-20", "HM-21")
@given(st.text())
def test_every_string_survives_the_round_trip_as_a_header_safe_value(value: str) -> None:
    encoded = encode_header_value(value)
    assert all(0x20 <= ord(c) <= 0x7E for c in encoded)
    assert encoded == encoded.strip()
    if not any(0xD800 <= ord(c) <= 0xDFFF for c in value):
        assert decode_header_value(encoded) == value


@pytest.mark.spec("HM-21", "HM-22")
@pytest.mark.parametrize(
    "bad", ["=?base64?not base64!?=", "=?base64?//79?=", "a\x00b", "caf\u00e9", "x\r\ny"]
)
def test_a_bad_received_value_is_refused(bad: str) -> None:
    with pytest.raises(HeaderValueError):
        decode_header_value(bad)


@pytest.mark.spec("HM-26")
def test_annotations_through_properties_chains() -> None:
    schema = {
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "options": {
                "type": "object",
                "properties": {
                    "dry_run": {"type": "boolean", "x-mcp-header": "Dry-Run"},
                    "limit": {"type": "integer", "x-mcp-header": "Limit"},
                },
            },
        },
    }
    assert header_annotations(schema) == (
        HeaderAnnotation("Region", ("region",), "string"),
        HeaderAnnotation("Dry-Run", ("options", "dry_run"), "boolean"),
        HeaderAnnotation("Limit", ("options", "limit"), "integer"),
    )
    assert header_annotations({"type": "object"}) == ()


@pytest.mark.spec("HM-26")
@pytest.mark.parametrize(
    ("schema", "why"),
    [
        ({"properties": {"a": {"type": "string", "x-mcp-header": ""}}}, "token"),
        ({"properties": {"a": {"type": "string", "x-mcp-header": "A B"}}}, "token"),
        ({"properties": {"a": {"type": "string", "x-mcp-header": "A\r\nX: y"}}}, "token"),
        ({"properties": {"a": {"type": "string", "x-mcp-header": 7}}}, "token"),
        ({"properties": {"a": {"type": "number", "x-mcp-header": "A"}}}, "'number'"),
        ({"properties": {"a": {"type": "object", "x-mcp-header": "A"}}}, "'object'"),
        (
            {
                "properties": {
                    "a": {"type": "string", "x-mcp-header": "Name"},
                    "b": {"type": "string", "x-mcp-header": "name"},
                }
            },
            "twice",
        ),
        (
            {
                "properties": {
                    "a": {"type": "array", "items": {"type": "string", "x-mcp-header": "A"}}
                }
            },
            "reachable",
        ),
        ({"oneOf": [{"properties": {"a": {"type": "string", "x-mcp-header": "A"}}}]}, "reachable"),
        ({"$defs": {"d": {"type": "string", "x-mcp-header": "A"}}}, "reachable"),
        ({"type": "string", "x-mcp-header": "Root"}, "reachable"),
    ],
    ids=[
        "empty",
        "space",
        "crlf",
        "not-a-string",
        "number",
        "object",
        "duplicate",
        "in-items",
        "in-oneOf",
        "in-defs",
        "root",
    ],
)
def test_invalid_annotations_make_the_tool_unusable(schema: dict[str, Any], why: str) -> None:
    with pytest.raises(InvalidHeaderAnnotation, match=why):
        header_annotations(schema)


@pytest.mark.spec("HM-15", "HM-19", "HM-25")
def test_the_headers_of_the_spec_example() -> None:
    assert request_headers("tools/call", SQL_PARAMS, header_annotations(SQL_SCHEMA)) == {
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": "execute_sql",
        "Mcp-Param-Region": "us-west1",
    }
    assert request_headers(
        "resources/read", {"_meta": META, "uri": "file:///projects/myapp/config.json"}
    ) == {
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "resources/read",
        "Mcp-Name": "file:///projects/myapp/config.json",
    }
    assert request_headers("tools/list", {"_meta": META}) == {
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/list",
    }


@pytest.mark.spec("HM-25")
def test_argument_values_in_header_form_and_absent_ones_omitted() -> None:
    schema = {
        "properties": {
            "n": {"type": "integer", "x-mcp-header": "N"},
            "flag": {"type": "boolean", "x-mcp-header": "Flag"},
            "text": {"type": "string", "x-mcp-header": "Text"},
            "gone": {"type": "string", "x-mcp-header": "Gone"},
        }
    }
    params = {
        "_meta": META,
        "name": "t",
        "arguments": {"n": -7, "flag": False, "text": "é", "gone": None},
    }
    headers = request_headers("tools/call", params, header_annotations(schema))
    assert headers["Mcp-Param-N"] == "-7"
    assert headers["Mcp-Param-Flag"] == "false"
    assert headers["Mcp-Param-Text"] == "=?base64?w6k=?="
    assert "Mcp-Param-Gone" not in headers


def _sql_headers(**changes: str | None) -> dict[str, str]:
    headers = request_headers("tools/call", SQL_PARAMS, header_annotations(SQL_SCHEMA))
    for name, value in changes.items():
        key = name.replace("_", "-")
        if value is None:
            headers.pop(key)
        else:
            headers[key] = value
    return headers


@pytest.mark.spec("HM-15", "HM-19", "HM-21", "HM-22", "HM-28")
@pytest.mark.parametrize(
    ("headers", "why"),
    [
        (_sql_headers(), None),
        ({k.lower(): v for k, v in _sql_headers().items()}, None),
        ({k.upper(): v for k, v in _sql_headers().items()}, None),
        (_sql_headers(Mcp_Name="=?base64?ZXhlY3V0ZV9zcWw=?="), None),
        (_sql_headers(MCP_Protocol_Version=None), "MCP-Protocol-Version header is missing"),
        (_sql_headers(MCP_Protocol_Version="2025-11-25"), "does not match"),
        (_sql_headers(Mcp_Method=None), "Mcp-Method header is missing"),
        (_sql_headers(Mcp_Method="TOOLS/CALL"), "does not match"),
        (_sql_headers(Mcp_Name=None), "Mcp-Name header is missing"),
        (_sql_headers(Mcp_Name="drop_tables"), "Mcp-Name does not match"),
        (_sql_headers(Mcp_Name="=?base64?!!?="), "Base64"),
        (_sql_headers(Mcp_Param_Region=None), "Mcp-Param-Region header is missing"),
        (_sql_headers(Mcp_Param_Region="eu-west1"), "does not match"),
        (_sql_headers(Mcp_Param_Region="us-west1\x00"), "characters"),
    ],
    ids=[
        "agree",
        "lowercase-names",
        "uppercase-names",
        "name-encoded",
        "no-version",
        "other-version",
        "no-method",
        "method-case",
        "no-name",
        "other-name",
        "broken-sentinel",
        "no-param",
        "other-param",
        "control-char",
    ],
)
def test_what_a_server_refuses(headers: dict[str, str], why: str | None) -> None:
    reason = header_mismatch(headers, "tools/call", SQL_PARAMS, header_annotations(SQL_SCHEMA))
    if why is None:
        assert reason is None
    else:
        assert reason is not None
        assert why in reason


@pytest.mark.spec("HM-22", "HM-28")
def test_integers_compare_as_numbers_and_absent_values_expect_no_header() -> None:
    schema = {"properties": {"n": {"type": "integer", "x-mcp-header": "N"}}}
    annotations = header_annotations(schema)
    base = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "t"}
    params: dict[str, Any] = {"_meta": META, "name": "t", "arguments": {"n": 42}}
    assert (
        header_mismatch({**base, "Mcp-Param-N": "42.0"}, "tools/call", params, annotations) is None
    )
    assert header_mismatch({**base, "Mcp-Param-N": "43"}, "tools/call", params, annotations)
    assert header_mismatch({**base, "Mcp-Param-N": "forty"}, "tools/call", params, annotations)
    # null or absent: no header expected, and one sent anyway disagrees with the body.
    for arguments in ({"n": None}, {}):
        absent = {**params, "arguments": arguments}
        assert header_mismatch(base, "tools/call", absent, annotations) is None
        assert header_mismatch({**base, "Mcp-Param-N": "1"}, "tools/call", absent, annotations)


@pytest.mark.spec("HM-24")
def test_a_repeated_header_is_a_mismatch() -> None:
    pairs = [*_sql_headers().items(), ("mcp-method", "tools/call")]
    reason = header_mismatch(pairs, "tools/call", SQL_PARAMS, header_annotations(SQL_SCHEMA))
    assert reason is not None
    assert "more than once" in reason


@pytest.mark.spec("HM-26")
def test_an_x_mcp_header_key_in_data_is_not_an_annotation() -> None:
    # default, const, enum and examples hold JSON values, not subschemas.
    schema = {
        "type": "object",
        "properties": {
            "config": {
                "type": "object",
                "default": {"x-mcp-header": "NotOne"},
                "examples": [{"x-mcp-header": "NorThis"}],
            },
            "mode": {"enum": [{"x-mcp-header": "M"}], "const": {"x-mcp-header": "M"}},
            "region": {"type": "string", "x-mcp-header": "Region"},
        },
    }
    assert header_annotations(schema) == (HeaderAnnotation("Region", ("region",), "string"),)


@pytest.mark.spec("HM-26")
@pytest.mark.parametrize(
    ("schema", "path"),
    [
        (
            {"properties": {"a": {"properties": {"b": {"type": "number", "x-mcp-header": "B"}}}}},
            ("a", "b"),
        ),
        (
            {"properties": {"a": {"type": "array", "items": {"x-mcp-header": "A"}}}},
            ("a", "<items>"),
        ),
        ({"type": "string", "x-mcp-header": "Root"}, ()),
    ],
    ids=["nested", "in-items", "root"],
)
def test_the_refusal_says_where_and_is_an_mcp_error(
    schema: dict[str, Any], path: tuple[str, ...]
) -> None:
    with pytest.raises(InvalidHeaderAnnotation) as caught:
        header_annotations(schema)
    assert caught.value.path == path
    assert isinstance(caught.value, MCPError)
    assert isinstance(caught.value, ValueError)
