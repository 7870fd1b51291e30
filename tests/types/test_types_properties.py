"""Property tests: unstructure then structure gives back the object, via JSON text."""

from typing import Any

import orjson
from hypothesis import given
from hypothesis import strategies as st

from trio_mcp import types as t

json_scalars: st.SearchStrategy[Any] = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**53), 2**53),
    st.text(max_size=8),
    st.floats(allow_nan=False, allow_infinity=False),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=10,
)
json_objects = st.dictionaries(st.text(max_size=8), json_values, max_size=4)
ids = st.text(max_size=8) | st.integers(-(2**53), 2**53)
maybe = st.none().__or__
annotations = st.builds(
    t.Annotations,
    audience=maybe(st.lists(st.sampled_from(["user", "assistant"]), max_size=2)),
    priority=maybe(st.floats(0, 1)),
    last_modified=maybe(st.text(max_size=5)),
)
text = st.builds(
    t.TextContent, text=st.text(), annotations=maybe(annotations), meta=maybe(json_objects)
)
image = st.builds(t.ImageContent.from_bytes, st.binary(max_size=20), st.text(max_size=10))
link = st.builds(t.ResourceLink, uri=st.text(), name=st.text(), size=maybe(st.integers(0, 2**53)))
embedded = st.builds(
    t.EmbeddedResource,
    resource=st.builds(t.TextResourceContents, uri=st.text(), text=st.text())
    | st.builds(t.BlobResourceContents.from_bytes, st.binary(max_size=10), uri=st.text()),
)
content_blocks = text | image | link | embedded

VALUES: dict[str, st.SearchStrategy[Any]] = {
    "CallToolRequestParams": st.builds(
        t.CallToolRequestParams,
        name=st.text(),
        arguments=maybe(json_objects),
        meta=maybe(json_objects),
        task=maybe(st.builds(t.TaskMetadata, ttl=maybe(st.integers(0, 2**53)))),
    ),
    "CallToolResult": st.builds(
        t.CallToolResult,
        content=st.lists(content_blocks, max_size=4),
        structured_content=maybe(json_objects),
        is_error=maybe(st.booleans()),
    ),
    "ProgressNotificationParams": st.builds(
        t.ProgressNotificationParams,
        progress_token=ids,
        progress=st.floats(0, 1e6) | st.integers(0, 2**53),
        total=maybe(st.floats(0, 1e6)),
        message=maybe(st.text()),
    ),
    "CancelledNotificationParams": st.builds(
        t.CancelledNotificationParams, request_id=maybe(ids), reason=maybe(st.text())
    ),
    "LoggingMessageNotificationParams": st.builds(
        t.LoggingMessageNotificationParams,
        level=st.sampled_from(t.LoggingLevel),
        logger=maybe(st.text()),
        data=json_values,
    ),
    "Task": st.builds(
        t.Task,
        task_id=st.text(),
        status=st.sampled_from(["working", "input_required", "completed", "failed", "cancelled"]),
        created_at=st.text(),
        last_updated_at=st.text(),
        ttl=maybe(st.integers(0, 2**53)),
        poll_interval=maybe(st.integers(0, 2**53)),
    ),
}


@given(st.sampled_from(sorted(VALUES)).flatmap(lambda name: VALUES[name]))
def test_round_trip_through_json_text(value: Any) -> None:
    wire = orjson.loads(orjson.dumps(t.unstructure(value)))
    assert t.strict_converter.structure(wire, type(value)) == value
    assert t.strict_converter.unstructure(t.strict_converter.structure(wire, type(value))) == wire


@given(st.lists(content_blocks, max_size=4))
def test_content_blocks_round_trip_as_a_union(blocks: list[Any]) -> None:
    wire = orjson.loads(orjson.dumps(t.unstructure(blocks)))
    assert t.strict_converter.structure(wire, list[t.ContentBlock]) == blocks
