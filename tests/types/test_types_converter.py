"""Behaviour of the converter: naming, strictness, validation, unions, helpers."""

import ast
import base64
import pathlib
from typing import Any

import attrs
import cattrs
import pytest

from trio_mcp import types as t

CONTENT_BLOCK: Any = t.ContentBlock
ALL_CLASSES = [
    obj for name in t.__all__ if isinstance(obj := getattr(t, name), type) and attrs.has(obj)
]


# --- naming ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("python", "wire"),
    [
        ("meta", "_meta"),
        ("mime_type", "mimeType"),
        ("input_schema", "inputSchema"),
        ("read_only_hint", "readOnlyHint"),
        ("website_url", "websiteUrl"),
        ("tool_use_id", "toolUseId"),
        ("uri", "uri"),
    ],
)
def test_wire_name(python: str, wire: str) -> None:
    assert t.wire_name(python) == wire


@pytest.mark.parametrize("cls", ALL_CLASSES, ids=lambda c: c.__name__)
def test_every_class_is_frozen_slotted_and_names_are_mechanical(cls: type[Any]) -> None:
    setattr_: Any = cls.__setattr__
    assert setattr_ is not object.__setattr__  # frozen
    assert "__slots__" in cls.__dict__
    names = [t.wire_name(a.name) for a in attrs.fields(cls)]
    assert len(set(names)) == len(names)
    for name in names:
        assert name == "_meta" or "_" not in name


def test_converters_are_project_owned() -> None:
    assert t.converter is not cattrs.global_converter
    assert t.strict_converter is not t.converter


def test_types_never_import_trio() -> None:
    package = pathlib.Path(t.__file__).parent
    for path in package.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                assert all(a.name.split(".")[0] != "trio" for a in node.names), path
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                assert (node.module or "").split(".")[0] != "trio", path


# --- unstructuring -----------------------------------------------------------


def test_none_is_omitted_but_tags_are_kept() -> None:
    content = t.TextContent(text="hi")
    assert t.unstructure(content) == {"type": "text", "text": "hi"}
    assert t.unstructure(t.ElicitRequestURLParams(message="m", elicitation_id="e", url="u")) == {
        "mode": "url",
        "message": "m",
        "elicitationId": "e",
        "url": "u",
    }


def test_required_nullable_fields_are_sent_as_null() -> None:
    task = t.Task(
        task_id="x",
        status="working",
        created_at="2025-11-25T10:30:00Z",
        last_updated_at="2025-11-25T10:30:00Z",
        ttl=None,
    )
    assert t.unstructure(task)["ttl"] is None
    log = t.LoggingMessageNotificationParams(level=t.LoggingLevel.INFO, data=None)
    assert t.unstructure(log) == {"level": "info", "data": None}
    assert t.structure(t.LoggingMessageNotificationParams, {"level": "info", "data": None}) == log


def test_meta_maps_to_underscore_meta() -> None:
    params = t.CallToolRequestParams(name="echo", meta={"progressToken": 7})
    assert t.unstructure(params) == {"name": "echo", "_meta": {"progressToken": 7}}
    assert t.structure(
        t.CallToolRequestParams, {"name": "echo", "_meta": {"progressToken": 7}}
    ) == (params)


# --- strictness --------------------------------------------------------------


@pytest.mark.parametrize(
    ("cls", "data"),
    [
        (t.CallToolRequestParams, {"name": "x", "bogus": 1}),
        (t.CallToolRequestParams, {"name": "x", "meta": {}}),  # Python name, not wire name
        (t.CallToolResult, {"content": [{"type": "text", "text": "a", "extra": True}]}),
        (
            t.InitializeResult,
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {"listChanged": True, "future": True}},
                "serverInfo": {"name": "s", "version": "1"},
            },
        ),
    ],
)
def test_unknown_keys_fail_strict_and_are_ignored_by_default(cls: Any, data: Any) -> None:
    with pytest.raises(cattrs.BaseValidationError):
        t.strict_converter.structure(data, cls)
    t.converter.structure(data, cls)


def test_spec_page_example_with_annotations_inside_resource_contents() -> None:
    # server/tools.mdx (2025-11-25) shows "annotations" inside an embedded
    # resource's contents, which schema.ts does not define there.
    data = {
        "type": "resource",
        "resource": {
            "uri": "file:///project/src/main.rs",
            "mimeType": "text/x-rust",
            "text": "fn main() {}",
            "annotations": {"audience": ["user", "assistant"], "priority": 0.7},
        },
    }
    with pytest.raises(cattrs.BaseValidationError):
        t.strict_converter.structure(data, t.EmbeddedResource)
    lenient = t.converter.structure(data, t.EmbeddedResource)
    assert lenient.resource == t.TextResourceContents(
        uri="file:///project/src/main.rs", mime_type="text/x-rust", text="fn main() {}"
    )


# --- validation ----------------------------------------------------------------

BAD_IDS: list[object] = [True, False, 1.0, 1.5, None, [], {}]


@pytest.mark.spec("BP-02")
@pytest.mark.parametrize("bad", BAD_IDS, ids=repr)
def test_request_id_rejects_bool_float_null(bad: object) -> None:
    with pytest.raises(Exception):  # noqa: B017, PT011 - cattrs raises TypeError here
        t.structure(t.RequestId, bad)


@pytest.mark.spec("BP-02")
@pytest.mark.parametrize("good", ["123", "", 0, -5, 2**63])
def test_request_id_accepts_str_and_int(good: object) -> None:
    assert t.structure(t.RequestId, good) == good


@pytest.mark.spec("PG-01")
@pytest.mark.parametrize("bad", [True, 1.5, None, ["a"]], ids=repr)
def test_progress_token_rejects_non_str_int(bad: object) -> None:
    with pytest.raises(cattrs.BaseValidationError):
        t.structure(t.ProgressNotificationParams, {"progressToken": bad, "progress": 1})


@pytest.mark.parametrize("bad", [True, 2.0], ids=repr)
def test_cancelled_request_id_rejects_bool_and_float(bad: object) -> None:
    with pytest.raises(cattrs.BaseValidationError):
        t.structure(t.CancelledNotificationParams, {"requestId": bad})


@pytest.mark.parametrize(
    ("cls", "data"),
    [
        (t.CallToolRequestParams, {"name": "x", "arguments": ["a"]}),
        (t.CallToolRequestParams, {"name": "x", "arguments": "a=1"}),
        (t.CallToolRequestParams, {"name": "x", "_meta": 3}),
        (t.CallToolResult, {"content": [], "structuredContent": [1, 2]}),
        (t.Tool, {"name": "x", "inputSchema": True}),
        (t.ServerCapabilities, {"logging": True}),
        (t.ServerCapabilities, {"experimental": {"x": 1}}),
    ],
)
def test_json_object_fields_reject_non_objects(cls: Any, data: Any) -> None:
    with pytest.raises(cattrs.BaseValidationError):
        t.structure(cls, data)


@pytest.mark.parametrize("cls", [t.CallToolRequestParams, t.CallToolResult, t.TextContent])
@pytest.mark.parametrize("bad", [3, True, "x", ["k", 1], [["k", 1]]], ids=repr)
def test_an_optional_meta_is_a_json_object_or_absent(cls: Any, bad: object) -> None:
    # One hook serves every ``JSONObject | None`` field (issue #16): it passes
    # an object through as it came, and refuses anything else with the path.
    base: dict[str, Any] = {"name": "x", "content": [], "type": "text", "text": "a"}
    meta = {"k": {"nested": [1]}}
    assert t.structure(cls, {**base, "_meta": meta}).meta is meta
    assert t.structure(cls, {**base, "_meta": None}).meta is None
    assert t.structure(cls, base).meta is None
    with pytest.raises(cattrs.BaseValidationError) as caught:
        t.structure(cls, {**base, "_meta": bad})
    assert cattrs.transform_error(caught.value) == [
        "invalid value for type, expected dict[str, typing.Any] | None @ $.meta"
    ]


@pytest.mark.parametrize(
    ("cls", "data"),
    [
        (t.CallToolRequestParams, {"name": 5}),  # no str(5) coercion
        (t.CallToolResult, {"content": [], "isError": "false"}),  # no bool("false")
        (t.CallToolResult, {"content": "text"}),  # a string is not a list
        (t.CallToolResult, {"content": {"type": "text", "text": "a"}}),
        (t.ProgressNotificationParams, {"progressToken": 1, "progress": "50"}),
        (t.ProgressNotificationParams, {"progressToken": 1, "progress": True}),
        (t.CreateMessageRequestParams, {"messages": [], "maxTokens": 10.5}),
        (t.CreateMessageRequestParams, {"messages": [], "maxTokens": True}),
        (t.Completion, {"values": ["a"], "total": False}),
        (t.SetLevelRequestParams, {"level": "verbose"}),
        (t.TextContent, {"type": "image", "text": "a"}),
        (t.Task, {"taskId": "a", "status": "done", "createdAt": "", "lastUpdatedAt": "", "ttl": 1}),
        (t.ElicitResult, {"action": "accept", "content": {"a": {"nested": 1}}}),
        (t.ElicitResult, {"action": "accept", "content": {"a": [1, 2]}}),
    ],
)
def test_primitives_are_checked_not_coerced(cls: Any, data: Any) -> None:
    with pytest.raises(cattrs.BaseValidationError):
        t.structure(cls, data)


@pytest.mark.parametrize("bad", ["all", ["toolsListChanged"], 1, None])
def test_an_object_of_optional_fields_is_still_an_object(bad: object) -> None:
    # Every field of a SubscriptionFilter (or ClientCapabilities) is optional:
    # a string or a list must not pass as one with nothing set.
    with pytest.raises(cattrs.BaseValidationError):
        t.structure(t.SubscriptionsListenRequestParams, {"notifications": bad})
    with pytest.raises(cattrs.BaseValidationError):
        t.structure(
            t.InitializeRequestParams,
            {
                "protocolVersion": "2025-11-25",
                "capabilities": bad,
                "clientInfo": {"name": "c", "version": "1"},
            },
        )


def test_float_fields_keep_ints() -> None:
    params = t.structure(t.ProgressNotificationParams, {"progressToken": 1, "progress": 50})
    assert params.progress == 50
    assert type(params.progress) is int


def test_errors_name_the_failing_path() -> None:
    data = {"content": [{"type": "text", "text": "ok"}, {"type": "text", "text": 3}]}
    with pytest.raises(cattrs.BaseValidationError) as info:
        t.structure(t.CallToolResult, data)
    messages = cattrs.transform_error(info.value)
    assert any("$.content[1]" in m for m in messages), messages


def test_missing_required_field_is_an_error() -> None:
    with pytest.raises(cattrs.BaseValidationError) as info:
        t.structure(t.CallToolRequestParams, {"arguments": {}})
    assert any("name" in m for m in cattrs.transform_error(info.value))


# --- unions ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "cls"),
    [
        ({"type": "text", "text": "a"}, t.TextContent),
        ({"type": "image", "data": "AA==", "mimeType": "image/png"}, t.ImageContent),
        ({"type": "audio", "data": "AA==", "mimeType": "audio/wav"}, t.AudioContent),
        ({"type": "resource_link", "uri": "u", "name": "n"}, t.ResourceLink),
        ({"type": "resource", "resource": {"uri": "u", "blob": "AA=="}}, t.EmbeddedResource),
    ],
)
def test_content_block_dispatches_on_type(data: Any, cls: type[Any]) -> None:
    assert type(t.strict_converter.structure(data, CONTENT_BLOCK)) is cls


def test_unknown_content_type_is_an_error() -> None:
    with pytest.raises(Exception):  # noqa: B017, PT011 - cattrs raises KeyError here
        t.structure(t.ContentBlock, {"type": "video", "data": ""})


def test_tool_use_is_not_a_content_block_in_tool_results() -> None:
    data = {"content": [{"type": "tool_use", "id": "1", "name": "n", "input": {}}]}
    with pytest.raises(cattrs.BaseValidationError):
        t.structure(t.CallToolResult, data)


def test_resource_contents_told_apart_by_text_or_blob() -> None:
    result = t.structure(
        t.ReadResourceResult,
        {"contents": [{"uri": "a", "text": "x"}, {"uri": "b", "blob": "AA=="}]},
    )
    assert [type(c).__name__ for c in result.contents] == [
        "TextResourceContents",
        "BlobResourceContents",
    ]


def test_elicit_params_told_apart() -> None:
    form = t.structure(t.ElicitRequestParams, {"message": "m", "requestedSchema": {}})
    assert isinstance(form, t.ElicitRequestFormParams)
    assert form.mode is None
    url = t.structure(
        t.ElicitRequestParams, {"mode": "url", "message": "m", "elicitationId": "e", "url": "u"}
    )
    assert isinstance(url, t.ElicitRequestURLParams)


def test_sampling_content_single_or_list() -> None:
    single = t.structure(
        t.SamplingMessage, {"role": "user", "content": {"type": "text", "text": "a"}}
    )
    assert single.content == t.TextContent(text="a")
    many = t.structure(
        t.SamplingMessage, {"role": "user", "content": [{"type": "text", "text": "a"}]}
    )
    assert many.content == [t.TextContent(text="a")]
    with pytest.raises(cattrs.BaseValidationError):
        t.structure(t.SamplingMessage, {"role": "user", "content": "a"})


def test_completion_ref_dispatches_on_type() -> None:
    params = t.structure(
        t.CompleteRequestParams,
        {
            "ref": {"type": "ref/resource", "uri": "file:///{p}"},
            "argument": {"name": "p", "value": ""},
        },
    )
    assert params.ref == t.ResourceTemplateReference(uri="file:///{p}")
    assert t.ResourceReference is t.ResourceTemplateReference


def test_task_payload_keeps_the_whole_object() -> None:
    data = {"content": [{"type": "text", "text": "a"}], "_meta": {"k": 1}}
    payload = t.structure(t.GetTaskPayloadResult, data)
    assert t.structure(t.CallToolResult, payload.payload).meta == {"k": 1}
    assert t.unstructure(payload) == data


# --- helpers -----------------------------------------------------------------


@pytest.mark.parametrize("cls", [t.ImageContent, t.AudioContent])
def test_binary_content_helpers(cls: Any) -> None:
    raw = bytes(range(256))
    content = cls.from_bytes(raw, "application/octet-stream")
    assert content.data == base64.b64encode(raw).decode()
    assert content.decoded() == raw
    with pytest.raises(ValueError, match="base64"):
        cls(data="not base64!", mime_type="x").decoded()


def test_blob_helpers() -> None:
    blob = t.BlobResourceContents.from_bytes(b"\x00\x01", uri="file:///a", mime_type="x/y")
    assert t.unstructure(blob) == {"uri": "file:///a", "mimeType": "x/y", "blob": "AAE="}
    assert blob.decoded() == b"\x00\x01"


def test_logging_levels_compare_by_severity() -> None:
    levels = list(t.LoggingLevel)
    assert [lv.value for lv in levels] == [
        "debug",
        "info",
        "notice",
        "warning",
        "error",
        "critical",
        "alert",
        "emergency",
    ]
    assert sorted(reversed(levels)) == levels
    assert t.LoggingLevel.DEBUG < t.LoggingLevel.INFO <= t.LoggingLevel.INFO
    assert t.LoggingLevel.EMERGENCY > t.LoggingLevel.ERROR >= t.LoggingLevel.WARNING
    assert t.LoggingLevel.WARNING.severity == 3
    with pytest.raises(TypeError):
        assert t.LoggingLevel.INFO < "debug"


@pytest.mark.parametrize(
    ("meta", "token"),
    [
        (None, None),
        ({}, None),
        ({"progressToken": "abc"}, "abc"),
        ({"progressToken": 0}, 0),
        ({"progressToken": True}, None),
        ({"progressToken": 1.5}, None),
    ],
)
def test_progress_token_property(meta: Any, token: object) -> None:
    assert t.CallToolRequestParams(name="x", meta=meta).progress_token == token
    assert t.RequestParams(meta=meta).progress_token == token
