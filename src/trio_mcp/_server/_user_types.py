"""The types a tool takes and returns beyond plain JSON, and their JSON forms.

Every type here has one JSON Schema (written by :func:`trio_mcp._server._schema.type_schema`)
and one conversion each way (by :data:`user_converter`): an argument is validated
against the schema, then structured into the annotated type; a result is
unstructured into JSON, then checked against the ``outputSchema``.

=================================  ==================================================
Python type                        JSON form
=================================  ==================================================
``datetime``                       string, ISO 8601 (``format: date-time``), e.g.
                                   ``"2026-12-07T18:30:00+00:00"``; a naive value is
                                   sent without an offset, so give aware datetimes
                                   for RFC 3339 peers
``date``                           string, ISO 8601 (``format: date``), ``"2026-12-07"``
``time``                           string, ISO 8601 (``format: time``), ``"18:30:00"``
``timedelta``                      number of **seconds** (fractions allowed), e.g.
                                   ``90.5``; a plain number is what peers and models
                                   produce most reliably (an ISO 8601 duration such
                                   as ``PT1M30.5S`` is not accepted)
``bytes``                          string, standard base64 (``contentEncoding:
                                   base64``)
``UUID``                           string (``format: uuid``)
``Path`` (any ``PurePath`` class)  string
``Decimal``                        **string** of a decimal number (a ``pattern``),
                                   e.g. ``"12.50"``: exact, where a JSON number
                                   would pass through a float
``set[T]``, ``frozenset[T]``       array with ``uniqueItems: true`` (sent sorted
                                   when the items sort)
``Enum``                           one of the members' values
dataclass, attrs class             object of its fields (Python names)
pydantic model                     the model's own JSON Schema and ``model_dump
                                   (mode="json")``; pydantic is only looked at when
                                   an annotation is a model (it is then imported
                                   already), never imported here
=================================  ==================================================

``format`` is an annotation for the peer: arguments are checked by parsing them,
and a value that does not parse is refused naming the argument and the form
expected.
"""

from __future__ import annotations

import base64
import binascii
import copy
import datetime as dt
import sys
import uuid
from collections.abc import Callable, Mapping
from collections.abc import Set as AbstractSet
from decimal import Decimal, InvalidOperation
from pathlib import PurePath
from typing import Any

import attrs
import cattrs

#: A decimal number as a string: JSON's number grammar, leading zeros allowed.
DECIMAL_PATTERN = r"^-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?$"

#: What a tool's parameters and result may be, for the error that refuses another type.
ALLOWED = (
    "str, int, float, bool, None, Any, list, tuple, set, frozenset, dict with str keys, "
    "Literal, an Enum, datetime, date, time, timedelta, bytes, UUID, Path, Decimal, "
    "a dataclass, an attrs class, a TypedDict, a pydantic model, or a union of these"
)


@attrs.frozen
class ScalarForm:
    """A Python type carried as one JSON scalar."""

    schema: Mapping[str, Any]
    #: JSON value -> Python value; raises ValueError saying what was expected.
    structure: Callable[[Any], Any]
    #: Python value -> JSON value.
    unstructure: Callable[[Any], Any]


def _parsed_by(parse: Callable[[str], Any], expected: str) -> Callable[[Any], Any]:
    def structure(value: Any) -> Any:
        if not isinstance(value, str):
            raise ValueError(f"expected {expected}, got {type(value).__name__}")
        try:
            return parse(value)
        except (ValueError, TypeError, InvalidOperation, binascii.Error):
            raise ValueError(f"expected {expected}, not {value[:40]!r}") from None

    return structure


def _seconds(value: Any) -> dt.timedelta:
    if type(value) not in (int, float):
        raise ValueError(f"expected a number of seconds, got {type(value).__name__}")
    try:
        return dt.timedelta(seconds=value)
    except OverflowError:
        raise ValueError(f"{value!r} seconds is out of range for a timedelta") from None


def _total_seconds(value: dt.timedelta) -> float | int:
    seconds = value.total_seconds()
    return int(seconds) if seconds.is_integer() else seconds


def _b64decode(text: str) -> bytes:
    return base64.b64decode(text, validate=True)


def _b64encode(value: bytes) -> str:
    return base64.b64encode(value).decode("ascii")


def _decimal(text: str) -> Decimal:
    number = Decimal(text)
    if not number.is_finite():
        raise ValueError(text)
    return number


SCALARS: dict[type, ScalarForm] = {
    dt.datetime: ScalarForm(
        {"type": "string", "format": "date-time"},
        _parsed_by(dt.datetime.fromisoformat, "an ISO 8601 date-time (2026-12-07T18:30:00Z)"),
        dt.datetime.isoformat,
    ),
    dt.date: ScalarForm(
        {"type": "string", "format": "date"},
        _parsed_by(dt.date.fromisoformat, "an ISO 8601 date (2026-12-07)"),
        dt.date.isoformat,
    ),
    dt.time: ScalarForm(
        {"type": "string", "format": "time"},
        _parsed_by(dt.time.fromisoformat, "an ISO 8601 time (18:30:00)"),
        dt.time.isoformat,
    ),
    dt.timedelta: ScalarForm(
        {"type": "number", "description": "a duration in seconds"},
        _seconds,
        _total_seconds,
    ),
    bytes: ScalarForm(
        {"type": "string", "contentEncoding": "base64"},
        _parsed_by(_b64decode, "base64 text"),
        _b64encode,
    ),
    uuid.UUID: ScalarForm(
        {"type": "string", "format": "uuid"},
        _parsed_by(uuid.UUID, "a UUID (123e4567-e89b-12d3-a456-426614174000)"),
        str,
    ),
    Decimal: ScalarForm(
        {"type": "string", "pattern": DECIMAL_PATTERN},
        _parsed_by(_decimal, 'a decimal number as a string ("12.50")'),
        str,
    ),
}


def scalar_form(annotation: Any) -> ScalarForm | None:
    """The JSON scalar form of *annotation*, or None if it has none."""
    if not isinstance(annotation, type):
        return None
    form = SCALARS.get(annotation)
    if form is None and issubclass(annotation, PurePath):
        form = ScalarForm({"type": "string"}, _parsed_by(annotation, "a path"), str)
    return form


def is_pydantic_model(annotation: Any) -> bool:
    """Whether *annotation* is a pydantic model class. Never imports pydantic:
    a model class exists only once pydantic is imported."""
    pydantic = sys.modules.get("pydantic")
    return (
        pydantic is not None
        and isinstance(annotation, type)
        and issubclass(annotation, pydantic.BaseModel)
    )


def pydantic_schema(model: Any) -> dict[str, Any]:
    """The JSON Schema of a pydantic model, its ``$defs`` inlined (the schema
    is embedded in a tool's, where ``#/$defs/...`` would point elsewhere).

    Raises:
        TypeError: the model is recursive.
    """
    schema: dict[str, Any] = model.model_json_schema()
    definitions = schema.pop("$defs", {})
    inlined: dict[str, Any] = _inline(schema, definitions, frozenset(), model)
    return inlined


def _inline(node: Any, definitions: Mapping[str, Any], seen: frozenset[str], model: Any) -> Any:
    if isinstance(node, list):
        return [_inline(item, definitions, seen, model) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        name = ref.removeprefix("#/$defs/")
        if name in seen or name not in definitions:
            raise TypeError(f"recursive type {model.__qualname__} is not supported")
        target = _inline(copy.deepcopy(definitions[name]), definitions, seen | {name}, model)
        siblings = {k: _inline(v, definitions, seen, model) for k, v in node.items() if k != "$ref"}
        return {**target, **siblings}
    return {key: _inline(value, definitions, seen, model) for key, value in node.items()}


def _sorted_if_possible(items: AbstractSet[Any]) -> list[Any]:
    try:
        return sorted(items)
    except TypeError:
        return list(items)


def _make_converter() -> cattrs.Converter:
    conv = cattrs.Converter()
    for cls in SCALARS:
        conv.register_structure_hook(cls, _scalar_structure_hook)
        conv.register_unstructure_hook(cls, _scalar_unstructure_hook)
    conv.register_structure_hook_func(_is_path, _scalar_structure_hook)
    conv.register_unstructure_hook_func(_is_path, str)
    # Sets go out as arrays, sorted when their items sort (stable output).
    conv.register_unstructure_hook_func(
        _is_set_type, lambda value: [conv.unstructure(v) for v in _sorted_if_possible(value)]
    )
    conv.register_structure_hook_func(is_pydantic_model, _pydantic_structure)
    conv.register_unstructure_hook_func(is_pydantic_model, _pydantic_unstructure)
    return conv


def _is_path(cls: Any) -> bool:
    return isinstance(cls, type) and issubclass(cls, PurePath)


def _is_set_type(cls: Any) -> bool:
    origin = getattr(cls, "__origin__", None) or cls
    return isinstance(origin, type) and issubclass(origin, AbstractSet)


def _scalar_structure_hook(value: Any, cls: Any) -> Any:
    form = scalar_form(cls)
    assert form is not None  # registered for these classes only
    return form.structure(value)


def _scalar_unstructure_hook(value: Any) -> Any:
    form = SCALARS.get(type(value))
    if form is None:  # a subclass: the nearest registered class decides
        form = next(f for cls, f in SCALARS.items() if isinstance(value, cls))
    return form.unstructure(value)


def _pydantic_structure(value: Any, model: Any) -> Any:
    return model.model_validate(value)


def _pydantic_unstructure(value: Any) -> Any:
    return value.model_dump(mode="json")


def structuring_error(exc: BaseException, where: str) -> str:
    """One line saying why a value that passed the schema did not convert,
    with the place inside it (``... @ slot.when``) when it is nested."""
    if isinstance(exc, cattrs.BaseValidationError):
        return "; ".join(cattrs.transform_error(exc, path=where, format_exception=_reason))
    return _reason(exc, None)


def _reason(exc: BaseException, cls: Any) -> str:
    pydantic = sys.modules.get("pydantic")
    if pydantic is not None and isinstance(exc, pydantic.ValidationError):
        return "; ".join(
            f"{'.'.join(map(str, error['loc'])) or 'value'}: {error['msg']}"
            for error in exc.errors()
        )
    if isinstance(exc, ValueError | TypeError) and str(exc):
        return str(exc).splitlines()[0]
    return cattrs.v.format_exception(exc, cls)


#: The converter for values of user types (the wire converter of
#: :mod:`trio_mcp.types` camelCases the protocol's own types; a user's
#: classes keep their Python field names).
user_converter = _make_converter()
