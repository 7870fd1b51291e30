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
versions = st.sampled_from(["2026-07-28", "2025-11-25"]) | st.text(max_size=10)
cache_scopes = st.sampled_from(["public", "private"])
implementations = st.builds(t.Implementation, name=st.text(max_size=8), version=st.text(max_size=8))
client_capabilities = st.builds(
    t.ClientCapabilities,
    roots=maybe(st.builds(t.RootsCapability)),
    elicitation=maybe(st.builds(t.ElicitationCapability, form=maybe(json_objects))),
    extensions=maybe(st.dictionaries(st.text(max_size=8), json_objects, max_size=2)),
)
elicit_results = st.builds(
    t.ElicitResult,
    action=st.sampled_from(["accept", "decline", "cancel"]),
    content=maybe(st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=2)),
)
roots_results = st.builds(
    t.ListRootsResult, roots=st.lists(st.builds(t.Root, uri=st.text(max_size=8)), max_size=2)
)
input_responses = st.dictionaries(st.text(max_size=8), elicit_results | roots_results, max_size=3)
input_requests = st.dictionaries(
    st.text(max_size=8),
    st.builds(t.ListRootsInputRequest)
    | st.builds(
        t.ElicitInputRequest,
        params=st.builds(
            t.ModernElicitRequestURLParams, message=st.text(max_size=8), url=st.text(max_size=8)
        )
        | st.builds(
            t.ElicitRequestFormParams, message=st.text(max_size=8), requested_schema=json_objects
        ),
    ),
    max_size=3,
)
filters = st.builds(
    t.SubscriptionFilter,
    tools_list_changed=maybe(st.booleans()),
    prompts_list_changed=maybe(st.booleans()),
    resources_list_changed=maybe(st.booleans()),
    resource_subscriptions=maybe(st.lists(st.text(max_size=8), max_size=3)),
)

VALUES: dict[str, st.SearchStrategy[Any]] = {
    "CallToolRequestParams": st.builds(
        t.CallToolRequestParams,
        name=st.text(),
        arguments=maybe(json_objects),
        meta=maybe(json_objects),
        task=maybe(st.builds(t.TaskMetadata, ttl=maybe(st.integers(0, 2**53)))),
        input_responses=maybe(input_responses),
        request_state=maybe(st.text()),
    ),
    "ListToolsResult": st.builds(
        t.ListToolsResult,
        tools=st.just([]),
        result_type=maybe(st.sampled_from(["complete", "future_kind"])),
        next_cursor=maybe(st.text()),
        ttl_ms=maybe(st.integers(0, 2**53)),
        cache_scope=maybe(cache_scopes),
    ),
    "RequestMetaObject": st.builds(
        t.RequestMetaObject,
        protocol_version=versions,
        client_capabilities=client_capabilities,
        client_info=maybe(implementations),
        log_level=maybe(st.sampled_from(t.LoggingLevel)),
        progress_token=maybe(ids),
    ),
    "DiscoverResult": st.builds(
        t.DiscoverResult,
        result_type=st.just("complete"),
        supported_versions=st.lists(versions, max_size=3),
        capabilities=st.builds(
            t.ServerCapabilities,
            tools=maybe(st.builds(t.ToolsCapability, list_changed=maybe(st.booleans()))),
            extensions=maybe(st.dictionaries(st.text(max_size=8), json_objects, max_size=2)),
        ),
        instructions=maybe(st.text()),
        ttl_ms=st.integers(0, 2**53),
        cache_scope=cache_scopes,
    ),
    "InputRequiredResult": st.builds(
        t.InputRequiredResult, input_requests=input_requests, request_state=maybe(st.text())
    )
    | st.builds(t.InputRequiredResult, request_state=st.text()),
    "SubscriptionsListenRequestParams": st.builds(
        t.SubscriptionsListenRequestParams, notifications=filters, meta=maybe(json_objects)
    ),
    "SubscriptionsListenResult": st.builds(
        t.SubscriptionsListenResult,
        meta=st.builds(lambda i: {t.SUBSCRIPTION_ID_META_KEY: i}, ids),
        result_type=maybe(st.just("complete")),
    ),
    "UnsupportedProtocolVersionErrorData": st.builds(
        t.UnsupportedProtocolVersionErrorData,
        supported=st.lists(versions, max_size=3),
        requested=versions,
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
