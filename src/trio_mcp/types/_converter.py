"""The project-owned cattrs converter that owns the MCP wire format.

* Python ``snake_case`` field names map mechanically to wire ``camelCase``; the
  one special case is ``meta`` <-> ``_meta`` (:func:`wire_name`). A field whose
  attrs metadata has :data:`~trio_mcp.types.WIRE_NAME_METADATA_KEY` uses that
  key instead (the reserved ``io.modelcontextprotocol/...`` ``_meta`` keys).
* Optional fields (default ``None``) are omitted when ``None``; fields without a
  default (e.g. ``Task.ttl``, ``LoggingMessageNotificationParams.data``) are sent
  as ``null``; tag fields (``type: Literal["text"] = "text"``) are always sent.
* Unions of content classes are told apart by cattrs' default disambiguator:
  the shared ``type`` literal, or else a unique required key (``text``/``blob``,
  ``url``/``requestedSchema``).
* Primitives are checked, not coerced: a ``str`` field rejects ``5``, a ``bool``
  field rejects ``"false"``, ``int`` and ``str | int`` (ids, progress tokens)
  reject ``True`` and ``1.5``; ``float`` accepts ints. A :data:`JSONObject`
  must be a ``dict``; JSON values pass through unchanged (no copy).
* ``detailed_validation`` is on, so errors name the failing path
  (``cattrs.transform_error``). ``strict=True`` forbids unknown keys.

Hooks are generated once per class by cattrs and cached; structuring does no
reflection per call.
"""

import sys
from collections.abc import Callable, Mapping
from functools import cache
from types import NoneType, UnionType
from typing import TYPE_CHECKING, Any, TypeVar, Union, get_args, get_origin, overload

import attrs
import cattrs
from cattrs.cols import list_structure_factory
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override
from cattrs.preconf.json import make_converter as _make_json_converter

from ._base import (
    WIRE_NAME_METADATA_KEY,
    ElicitValue,
    InputResponses,
    JSONObject,
    JSONValue,
    RequestId,
)

if TYPE_CHECKING:
    from .sampling import SamplingContent
    from .tasks import GetTaskPayloadResult

__all__ = [
    "wire_name",
    "make_converter",
    "converter",
    "strict_converter",
    "structure",
    "unstructure",
]

T = TypeVar("T")

_PRIMITIVES = frozenset({str, int, float, bool, NoneType})


@cache
def wire_name(name: str) -> str:
    """The wire key of a Python field name: ``mime_type`` -> ``mimeType``, ``meta`` -> ``_meta``."""
    if name == "meta":
        return "_meta"
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _field_wire_name(field: "attrs.Attribute[Any]") -> str:
    explicit: str | None = field.metadata.get(WIRE_NAME_METADATA_KEY)
    return explicit if explicit is not None else wire_name(field.name)


def _type_name(t: Any) -> str:
    return t.__name__ if isinstance(t, type) else repr(t)


def _fail(expected: str, value: object) -> TypeError:
    return TypeError(f"expected {expected}, got {type(value).__name__}")


# --- primitive and JSON hooks ----------------------------------------------


def _structure_str(value: object, _: object) -> str:
    if isinstance(value, str):
        return value
    raise _fail("a string", value)


def _structure_int(value: object, _: object) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise _fail("an integer", value)


def _structure_float(value: object, _: object) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    raise _fail("a number", value)


def _structure_bool(value: object, _: object) -> bool:
    if isinstance(value, bool):
        return value
    raise _fail("a boolean", value)


def _structure_json_value(value: object, _: object) -> JSONValue:
    return value  # type: ignore[return-value]  # came from a JSON parser


def _structure_json_object(value: object, _: object) -> JSONObject:
    if isinstance(value, dict):
        return value
    raise _fail("a JSON object", value)


def _structure_optional_json_object(value: object, _: object) -> JSONObject | None:
    # ``JSONObject | None`` (every ``_meta`` field) in one call, not cattrs'
    # optional hook dispatching to the object hook: a 2026-07-28 message
    # always carries a ``_meta``. Same test, same message.
    if value is None or isinstance(value, dict):
        return value
    raise _fail("a JSON object", value)


def _structure_request_id(value: object, _: object) -> RequestId:
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    raise _fail("a string or an integer", value)


def _structure_elicit_value(value: object, _: object) -> ElicitValue:
    if isinstance(value, (str, int, float)):  # bool is an int
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value
    raise _fail("a string, number, boolean or list of strings", value)


def _identity(value: T) -> T:
    return value


def _is_alias_of(module: str, name: str) -> Callable[[Any], bool]:
    """A predicate: *t* is ``module.name``, without importing *module*.

    For the types of modules a bare server never imports (sampling, tasks): a
    type built from that module's classes cannot be asked for before the module
    is loaded, so while it is absent the answer is no. Importing it here would be
    tens of milliseconds of every start-up.
    """
    qualified = f"{__package__}.{module}"

    def predicate(t: Any) -> bool:
        loaded = sys.modules.get(qualified)
        return loaded is not None and t == getattr(loaded, name)

    return predicate


def _is_primitive_union(t: Any) -> bool:
    origin = get_origin(t)
    return (origin is Union or origin is UnionType) and all(a in _PRIMITIVES for a in get_args(t))


def _primitive_union_factory(t: Any) -> Callable[[object, object], object]:
    """Checks e.g. ``int | None`` by exact class: ``True`` is not an ``int`` here."""
    allowed = frozenset(get_args(t))
    if float in allowed:
        allowed |= {int}
    expected = " | ".join(sorted("null" if a is NoneType else a.__name__ for a in get_args(t)))

    def hook(value: object, _: object) -> object:
        if value.__class__ in allowed:
            return value
        raise _fail(expected, value)

    return hook


def _is_list(t: Any) -> bool:
    return get_origin(t) is list


def _list_factory(t: Any, conv: cattrs.Converter) -> Callable[[object, object], list[Any]]:
    """cattrs' list hook accepts any iterable (a string!); demand a real list."""
    inner = list_structure_factory(t, conv)

    def hook(value: object, t: object) -> list[Any]:
        if isinstance(value, list):
            result: list[Any] = inner(value, t)
            return result
        raise _fail("a JSON array", value)

    return hook


# --- factory ---------------------------------------------------------------


def make_converter(*, strict: bool = False) -> cattrs.Converter:
    """Build a converter for MCP types.

    ``strict=False`` (for peers) ignores unknown keys, as the spec grows over
    time; ``strict=True`` (for tests against spec examples) rejects them.
    """
    conv = _make_json_converter(detailed_validation=True, forbid_extra_keys=strict)

    def structure_attrs(cls: type[Any]) -> Callable[[Any, Any], Any]:
        renames = {a.name: override(rename=_field_wire_name(a)) for a in attrs.fields(cls)}
        inner = make_dict_structure_fn(
            cls,
            conv,
            _cattrs_forbid_extra_keys=strict,
            _cattrs_detailed_validation=True,
            **renames,  # type: ignore[arg-type]
        )

        def hook(value: Any, t: Any) -> Any:
            # The generated function tests keys with ``in``: a string or a list
            # would pass as an object whose optional fields are all absent
            # ("all" as a SubscriptionFilter). Only a JSON object is one.
            # A dict (what JSON parses to) first: the Mapping ABC check is a
            # Python-level call, on every object of every message.
            if type(value) is not dict and not isinstance(value, Mapping):
                raise _fail("a JSON object", value)
            return inner(value, t)

        # cattrs reads the renames of a class's hook to tell union members apart.
        hook.overrides = getattr(inner, "overrides", {})  # type: ignore[attr-defined]
        return hook

    def unstructure_attrs(cls: type[Any]) -> Callable[[Any], dict[str, Any]]:
        renames = {
            a.name: override(rename=_field_wire_name(a), omit_if_default=a.default is None)
            for a in attrs.fields(cls)
        }
        return make_dict_unstructure_fn(
            cls,
            conv,
            _cattrs_omit_if_default=False,
            **renames,  # type: ignore[arg-type]
        )

    conv.register_structure_hook_factory(attrs.has, structure_attrs)
    conv.register_unstructure_hook_factory(attrs.has, unstructure_attrs)
    conv.register_structure_hook_factory(_is_primitive_union, _primitive_union_factory)
    conv.register_structure_hook_factory(_is_list, lambda t: _list_factory(t, conv))

    conv.register_structure_hook(str, _structure_str)
    conv.register_structure_hook(int, _structure_int)
    conv.register_structure_hook(float, _structure_float)
    conv.register_structure_hook(bool, _structure_bool)

    # At runtime JSONValue is Any and JSONObject is dict[str, Any]: JSON values
    # pass through as they came from the parser, objects are only type-checked.
    conv.register_structure_hook_func(lambda t: t is Any, _structure_json_value)
    conv.register_unstructure_hook_func(lambda t: t is Any, _identity)
    conv.register_structure_hook_func(lambda t: t == JSONObject, _structure_json_object)
    conv.register_unstructure_hook_func(lambda t: t == JSONObject, _identity)
    optional_object: Any = JSONObject | None
    conv.register_structure_hook_func(
        lambda t: t == optional_object, _structure_optional_json_object
    )
    for id_type in (RequestId, RequestId | None):
        conv.register_unstructure_hook(id_type, _identity)
    conv.register_structure_hook(RequestId, _structure_request_id)
    conv.register_structure_hook(ElicitValue, _structure_elicit_value)
    conv.register_unstructure_hook(ElicitValue, _identity)

    # (block, list of blocks), looked up once sampling is loaded: the predicate
    # only matches then.
    sampling_blocks: list[Any] = []

    def structure_sampling_content(value: object, _: object) -> "SamplingContent":
        if not sampling_blocks:
            from .sampling import SamplingMessageContentBlock

            sampling_blocks.extend((SamplingMessageContentBlock, list[SamplingMessageContentBlock]))
        block, block_list = sampling_blocks
        if isinstance(value, list):
            return conv.structure(value, block_list)  # type: ignore[no-any-return]
        return conv.structure(value, block)  # type: ignore[no-any-return]

    def unstructure_sampling_content(value: "SamplingContent") -> object:
        if isinstance(value, list):
            return [conv.unstructure(v) for v in value]
        return conv.unstructure(value)

    is_sampling_content = _is_alias_of("sampling", "SamplingContent")
    conv.register_structure_hook_func(is_sampling_content, structure_sampling_content)
    conv.register_unstructure_hook_func(is_sampling_content, unstructure_sampling_content)

    def structure_payload(value: object, _: object) -> "GetTaskPayloadResult":
        from .tasks import GetTaskPayloadResult  # loaded: the predicate said so

        if isinstance(value, Mapping):
            return GetTaskPayloadResult(payload=dict(value))
        raise _fail("a JSON object", value)

    def structure_input_responses(value: object, _: object) -> InputResponses:
        # Imported on first use: only a retried 2026-07-28 request carries them.
        from .input_required import InputResponse

        response: Any = InputResponse
        if isinstance(value, dict):
            return {
                _structure_str(key, str): conv.structure(item, response)
                for key, item in value.items()
            }
        raise _fail("a JSON object", value)

    def unstructure_input_responses(value: InputResponses) -> dict[str, object]:
        # By each value's own class: the declared ``Result`` would drop its fields.
        return {key: conv.unstructure(item) for key, item in value.items()}

    is_responses: Callable[[Any], bool] = lambda t: t == InputResponses  # noqa: E731
    conv.register_structure_hook_func(is_responses, structure_input_responses)
    conv.register_unstructure_hook_func(is_responses, unstructure_input_responses)

    is_payload = _is_alias_of("tasks", "GetTaskPayloadResult")
    conv.register_structure_hook_func(is_payload, structure_payload)
    conv.register_unstructure_hook_func(is_payload, lambda r: r.payload)
    return conv


#: The default converter: unknown keys are ignored.
converter = make_converter()
#: The strict converter: unknown keys are errors (for tests).
strict_converter = make_converter(strict=True)


@overload
def structure(cls: type[T], data: object) -> T: ...
@overload
def structure(cls: object, data: object) -> Any: ...  # unions such as ContentBlock


def structure(cls: Any, data: object) -> Any:
    """Structure wire data into ``cls`` (a class or a union) with the default converter.

    Raises a ``cattrs`` ``BaseValidationError`` (an ``ExceptionGroup``) on bad
    input; ``cattrs.transform_error`` turns it into path-tagged messages.
    """
    return converter.structure(data, cls)


def unstructure(obj: object) -> Any:
    """Unstructure a value into JSON-ready Python data with the default converter."""
    return converter.unstructure(obj)
