"""JSON Schemas from Python annotations, validation, and structuring.

A small generator over a closed set of types: ``str``, ``int``, ``float``,
``bool``, ``None``, ``Any``, ``list[T]``, ``dict[str, T]``, ``tuple[...]``,
``set[T]``/``frozenset[T]`` (``uniqueItems``), ``Literal[...]``, ``Enum``
subclasses, unions, attrs classes, dataclasses, ``TypedDict``, pydantic models,
and the scalars carried as strings or numbers (``datetime``, ``date``, ``time``,
``timedelta``, ``bytes``, ``UUID``, ``Path``, ``Decimal``): their JSON forms and
conversions are in :mod:`trio_mcp._server._user_types`. Anything else is refused
when the tool is registered (a ``TypeError`` naming the parameter and listing
what is allowed), never when it is called.

A parameter (or an attrs / ``TypedDict`` field) annotated
``Annotated[T, Header("Name")]`` gets ``"x-mcp-header": "Name"`` on its
property: over 2026-07-28 Streamable HTTP a client mirrors it into the
``Mcp-Param-Name`` header (HM-25). The generator only writes the mark; whether
it is valid where it landed (under ``items``, on a ``number``, a duplicate...)
is decided on the finished schema by
:func:`trio_mcp.protocol._headers.header_annotations`, at registration (HM-26).

Schemas are JSON Schema 2020-12 (the default dialect, JS-01) with no ``$schema``
keyword; arguments are validated with ``jsonschema``'s 2020-12 validator, built
once per tool (JS-02, JS-04), and then structured into the annotated types with
a plain cattrs converter (user attrs classes keep their Python field names on
the wire; only the protocol's own types are camelCased).

A tool may also bring its own ``inputSchema`` (:meth:`FunctionSignature.from_function`'s
*input_schema*): it is listed and validated as given, and the function's
annotations only structure the arguments.

Spec: TL-06, TL-07, TL-20, JS-01, JS-02, JS-04, HM-25, HM-26.
"""

from __future__ import annotations

import copy
import dataclasses
import enum
import inspect
import re
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, is_typeddict

import attrs

if typing.TYPE_CHECKING:
    import jsonschema  # type: ignore[import-untyped]  # no stubs installed

from ..protocol._headers import SAFE_INTEGER
from ._user_types import (
    ALLOWED,
    is_pydantic_model,
    pydantic_schema,
    scalar_form,
    structuring_error,
    user_converter,
)

_PRIMITIVES: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


def validator_class() -> Any:
    """The validator class for every generated schema (JS-01: 2020-12 is the default).

    ``jsonschema`` is imported on first use, not with this module: it is the
    largest import of a server's start-up, and a server whose tools take only
    simple arguments never needs it (their quick checks decide, see
    :func:`quick_object_check`).
    """
    import jsonschema

    return jsonschema.Draft202012Validator


@attrs.frozen
class Header:
    """Mirror a tool parameter into the ``Mcp-Param-{name}`` HTTP header::

        @server.tool()
        async def execute_sql(region: Annotated[str, Header("Region")], query: str) -> str: ...

    The parameter's property gets ``"x-mcp-header": "Region"``, so over
    2026-07-28 Streamable HTTP a client sends ``Mcp-Param-Region: us-west1``
    beside the body and routers, load balancers and firewalls can read it
    without parsing JSON; the server refuses a header that disagrees with the
    body (400, -32020). Other transports and eras ignore the annotation.

    Rules, checked when the tool is registered (an
    :class:`~trio_mcp.protocol.InvalidHeaderAnnotation` naming the tool, the
    parameter and the reason): *name* is a non-empty RFC 9110 token, unique
    case-insensitively in the tool; the parameter is a ``str``, ``int`` or
    ``bool`` (not ``float``), reached from the root through object properties
    alone (a parameter, or a field of an attrs class or ``TypedDict``
    parameter; not inside a list, a union or an ``Optional`` object). An
    ``int`` gets ``minimum``/``maximum`` of +-(2**53 - 1), the range a header
    may carry. ``Optional[T]`` is accepted for a marked parameter: its property
    is plain ``T`` (a header has no null), so the argument may be left out but
    not sent as null.

    Do not mark secrets (passwords, API keys, tokens, personal data): headers are
    visible to every intermediary and are often logged.

    Spec: HM-25, HM-26, HM-30.
    """

    name: str


def _header_schema(schema: dict[str, Any], mark: Header) -> dict[str, Any]:
    # Optional[T]: a header carries no null, so the property is plain T and
    # "no value" is the argument left out (a header is omitted then: HM-25).
    branches = schema.get("anyOf")
    if isinstance(branches, list) and len(schema) == 1:
        typed = [b for b in branches if b != {"type": "null"}]
        if len(typed) == 1 and len(typed) < len(branches):
            schema = dict(typed[0])
    schema["x-mcp-header"] = mark.name
    if schema.get("type") == "integer":
        # Only integers a JSON number keeps exactly fit in a header (HM-26).
        schema.setdefault("minimum", -SAFE_INTEGER)
        schema.setdefault("maximum", SAFE_INTEGER)
    return schema


def type_schema(annotation: Any, _seen: frozenset[Any] = frozenset()) -> dict[str, Any]:
    """JSON Schema for one annotation from the supported set.

    Raises:
        TypeError: the annotation is outside the supported set, or recursive.
    """
    if annotation in _PRIMITIVES:
        return {"type": _PRIMITIVES[annotation]}
    if annotation is None or annotation is type(None):
        return {"type": "null"}
    if annotation is Any:
        return {}
    if annotation in _seen:
        raise TypeError(f"recursive type {annotation!r} is not supported")
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        schema = type_schema(args[0], _seen)
        marks = [m for m in annotation.__metadata__ if isinstance(m, Header)]
        if len(marks) > 1:
            raise TypeError("more than one Header mark")
        return _header_schema(schema, marks[0]) if marks else schema
    if origin in (typing.Required, typing.NotRequired):
        # TypedDict hints read with their extras (to see Header marks) keep these.
        return type_schema(args[0], _seen)
    if origin is typing.Literal:
        return {"enum": list(args)}
    if origin in (typing.Union, types.UnionType):
        non_null = [a for a in args if a is not type(None)]
        schemas = [type_schema(a, _seen) for a in non_null]
        if len(non_null) < len(args):
            schemas.append({"type": "null"})
        return {"anyOf": schemas}
    if origin is list or annotation is list:
        return {"type": "array", **({"items": type_schema(args[0], _seen)} if args else {})}
    if origin in (set, frozenset) or annotation in (set, frozenset):
        items = {"items": type_schema(args[0], _seen)} if args else {}
        return {"type": "array", **items, "uniqueItems": True}
    if origin is tuple or annotation is tuple:
        if not args:
            return {"type": "array"}
        if len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": type_schema(args[0], _seen)}
        return {
            "type": "array",
            "prefixItems": [type_schema(a, _seen) for a in args],
            "items": False,
            "minItems": len(args),
        }
    if origin is dict or annotation is dict:
        if args and args[0] is not str:
            raise TypeError(f"dict keys must be str, not {args[0]!r}")
        extra = {"additionalProperties": type_schema(args[1], _seen)} if len(args) == 2 else {}
        return {"type": "object", **extra}
    if origin is None:
        form = scalar_form(annotation)
        if form is not None:
            return dict(form.schema)
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return {"enum": [member.value for member in annotation]}
    if isinstance(annotation, type) and attrs.has(annotation):
        return _attrs_schema(annotation, _seen | {annotation})
    if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
        return _dataclass_schema(annotation, _seen | {annotation})
    if is_typeddict(annotation):
        return _typeddict_schema(annotation, _seen | {annotation})
    if is_pydantic_model(annotation):
        return pydantic_schema(annotation)
    raise TypeError(f"unsupported type {_type_name(annotation)}: use {ALLOWED}")


def _type_name(annotation: Any) -> str:
    if isinstance(annotation, type):
        module = annotation.__module__
        name = annotation.__qualname__
        return name if module == "builtins" else f"{module}.{name}"
    return repr(annotation)


def _dataclass_schema(cls: type, seen: frozenset[Any]) -> dict[str, Any]:
    hints = typing.get_type_hints(cls, include_extras=True)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for field in dataclasses.fields(cls):
        if not field.init:  # not a constructor argument: not in the JSON form
            continue
        properties[field.name] = type_schema(hints.get(field.name, Any), seen)
        if field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
            required.append(field.name)
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


def _attrs_schema(cls: type, seen: frozenset[Any]) -> dict[str, Any]:
    hints = typing.get_type_hints(cls, include_extras=True)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for field in attrs.fields(cls):
        properties[field.name] = type_schema(hints.get(field.name, Any), seen)
        if field.default is attrs.NOTHING:
            required.append(field.name)
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


def _typeddict_schema(cls: Any, seen: frozenset[Any]) -> dict[str, Any]:
    hints = typing.get_type_hints(cls, include_extras=True)
    properties = {name: type_schema(hint, seen) for name, hint in hints.items()}
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    required = [name for name in hints if name in cls.__required_keys__]
    if required:
        schema["required"] = required
    return schema


def needs_structuring(annotation: Any) -> bool:
    """Whether a validated JSON value must be converted to reach *annotation*.

    Plain JSON shapes (primitives, lists, dicts, unions of them) are already the
    right Python values once validated, which keeps the hot path free of cattrs.
    ``float`` counts: an integer argument is converted to float.
    """
    if annotation in (str, int, bool, type(None), None, Any, list, dict):
        return False
    origin = typing.get_origin(annotation)
    if origin in (list, dict, typing.Literal, typing.Union, types.UnionType, typing.Annotated):
        if origin is typing.Literal:
            return False
        return any(needs_structuring(a) for a in typing.get_args(annotation) if a is not Ellipsis)
    # A TypedDict is a plain dict at run time; everything else needs cattrs.
    return not is_typeddict(annotation)


def _float_or_same(value: Any) -> Any:
    return float(value) if type(value) is int else value


def make_structurer(annotation: Any) -> Callable[[Any], Any] | None:
    """A function turning a validated JSON value into *annotation*, or None (identity)."""
    if not needs_structuring(annotation):
        return None
    if annotation is float:
        return _float_or_same
    return lambda value: user_converter.structure(value, annotation)


_PARAM_DOC = re.compile(r"^\s*\*{0,2}(\w+)(?:\s*\([^)]*\))?\s*:\s*(.*)$")


def parse_docstring(doc: str | None) -> tuple[str | None, dict[str, str]]:
    """Split a Google-style docstring into (description, {parameter: doc}).

    The ``Args:``/``Arguments:``/``Parameters:`` section feeds the parameters'
    ``description``; the rest (up to the first section) is the description.
    """
    if not doc:
        return None, {}
    lines = inspect.cleandoc(doc).splitlines()
    description: list[str] = []
    params: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    for line in lines:
        stripped = line.strip()
        header = stripped.rstrip(":").lower()
        if stripped.endswith(":") and header in _SECTIONS and not line.startswith(" "):
            section = header
            current = None
            continue
        if section is None:
            description.append(line)
        elif section in ("args", "arguments", "parameters", "params"):
            match = _PARAM_DOC.match(line) if line.startswith(" ") else None
            if match and len(line) - len(line.lstrip()) <= 4:
                current = match.group(1)
                params[current] = match.group(2).strip()
            elif current is not None and stripped:
                params[current] = f"{params[current]} {stripped}".strip()
    text = "\n".join(description).strip()
    return (text or None), params


_SECTIONS = {
    "args",
    "arguments",
    "parameters",
    "params",
    "returns",
    "return",
    "raises",
    "yields",
    "examples",
    "example",
    "note",
    "notes",
    "cancellation",
    "spec",
}


@attrs.frozen
class Parameter:
    """One bindable parameter of a tool or prompt function."""

    name: str
    annotation: Any
    required: bool
    structure: Callable[[Any], Any] | None


@attrs.frozen
class FunctionSignature:
    """What a function accepts: its JSON Schema, validator, and how to bind arguments.

    Parameters annotated with one of the *context types* are injected (the
    value of :attr:`context_parameters` maps their names to the type) and are
    not part of the schema.
    """

    input_schema: dict[str, Any]
    parameters: Mapping[str, Parameter]
    context_parameters: Mapping[str, Any]
    description: str | None
    #: True when no argument needs converting (the fast path).
    plain: bool
    #: A sound pre-check of the arguments (True: valid), or None.
    quick_check: Callable[[Any], bool] | None = None
    #: Whether :attr:`input_schema` was checked against the 2020-12
    #: meta-schema when the signature was built (else: when the validator is).
    schema_checked: bool = True
    # The validator, once built (a list so the frozen instance can fill it).
    _validator: list[Any] = attrs.field(factory=list, eq=False, repr=False, alias="_validator")

    @property
    def validator(self) -> Any:
        """The 2020-12 validator of :attr:`input_schema`, built on first use.

        A schema not checked against the meta-schema when the signature was
        built (one generated entirely from simple annotations, valid by
        construction) is checked here, first.
        """
        if not self._validator:
            cls = validator_class()
            if not self.schema_checked:
                cls.check_schema(self.input_schema)
            self._validator.append(cls(self.input_schema))
        return self._validator[0]

    @classmethod
    def from_function(
        cls,
        fn: Callable[..., Any],
        *,
        context_types: tuple[Any, ...],
        input_schema: Mapping[str, Any] | None = None,
    ) -> FunctionSignature:
        """Build the signature of *fn*.

        *input_schema*, when given, replaces the generated schema: it is listed
        and validated as given (a deep copy), and must be an object schema
        whose properties are all parameters of *fn* and whose ``required``
        names every parameter without a default. The parameters' annotations
        still structure the arguments.

        Raises:
            TypeError: a parameter is ``*args``/``**kwargs`` or has an
                unsupported annotation, or *input_schema* does not fit *fn*
                (the message names the parameter).
            jsonschema.SchemaError: *input_schema* is not a valid 2020-12 schema.
        """
        hints = typing.get_type_hints(fn, include_extras=False)
        # The same hints with Annotated kept: they carry the Header marks.
        marked = typing.get_type_hints(fn, include_extras=True)
        description, docs = parse_docstring(inspect.getdoc(fn))
        properties: dict[str, Any] = {}
        required: list[str] = []
        parameters: dict[str, Parameter] = {}
        context_parameters: dict[str, Any] = {}
        for name, param in inspect.signature(fn).parameters.items():
            annotation = hints.get(name, Any)
            if annotation in context_types:
                context_parameters[name] = annotation
                continue
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
                raise TypeError(f"parameter {name!r}: must be a named parameter")
            try:
                schema = dict(type_schema(marked.get(name, Any)))
            except TypeError as exc:
                raise TypeError(f"parameter {name!r}: {exc}") from None
            is_required = param.default is inspect.Parameter.empty
            if not is_required:
                try:
                    default = user_converter.unstructure(param.default)
                    # The quick check is sound when it says True; otherwise
                    # jsonschema decides (and is imported for it).
                    check = _quick_value_check(schema)
                    if check is None or not check(default):
                        validator_class()(schema).validate(default)
                    schema["default"] = default
                except Exception:  # a default outside the schema is simply not advertised
                    pass
            if name in docs:
                # A type's own description (a timedelta's unit) stays, after the doc.
                own = schema.get("description")
                schema["description"] = f"{docs[name]} ({own})" if own else docs[name]
            properties[name] = schema
            parameters[name] = Parameter(name, annotation, is_required, make_structurer(annotation))
            if is_required:
                required.append(name)
        plain = all(p.structure is None for p in parameters.values())
        if input_schema is None:
            schema = {"type": "object", "properties": properties, "additionalProperties": False}
            if required:
                schema["required"] = required
        else:
            schema = _explicit_schema(input_schema, parameters)
            # Arguments the schema lets through but fn does not take are
            # refused by bind, which the plain path skips.
            plain = plain and schema.get("additionalProperties") is False
        quick = quick_object_check(schema)
        # A generated schema the quick check understands whole is made only of
        # primitive types, enums and anyOf of them: valid by construction. Its
        # meta-schema check waits for the validator (built only when a quick
        # check says no), so such a server never imports jsonschema. Every
        # other schema, and every explicit one, is checked now.
        checked = input_schema is not None or quick is None
        if checked:
            validator_class().check_schema(schema)
        return cls(
            schema,
            parameters,
            context_parameters,
            description,
            plain,
            quick,
            schema_checked=checked,
        )

    def bind(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Validated, structured keyword arguments (context parameters not included).

        Raises:
            ValueError: the arguments do not match the schema; the message names
                the argument and says why.
        """
        # A dict first: the Mapping ABC check is a Python-level call.
        if type(arguments) is not dict and not isinstance(arguments, Mapping):
            raise ValueError("arguments must be an object")
        # The quick check is exact for the simple shapes it understands and
        # says False when unsure; jsonschema then decides (and explains).
        if self.quick_check is None or not self.quick_check(arguments):
            errors = list(self.validator.iter_errors(arguments))
            if errors:
                raise ValueError(describe_errors(errors))
        if self.plain:
            return dict(arguments)
        kwargs: dict[str, Any] = {}
        for name, value in arguments.items():
            parameter = self.parameters.get(name)
            if parameter is None:  # only with an explicit schema that allows it
                raise ValueError(f"argument {name!r}: unknown argument")
            structure = parameter.structure
            try:
                kwargs[name] = value if structure is None else structure(value)
            except Exception as exc:
                raise ValueError(f"argument {name!r}: {structuring_error(exc, name)}") from None
        return kwargs


def _explicit_schema(
    input_schema: Mapping[str, Any], parameters: Mapping[str, Parameter]
) -> dict[str, Any]:
    """A deep copy of a tool's own *input_schema*, checked against its function.

    Raises:
        TypeError: not an object schema, a property that is no parameter, or a
            parameter without a default that the schema does not require.
    """
    if not isinstance(input_schema, Mapping) or input_schema.get("type") != "object":
        raise TypeError('input_schema must be a JSON Schema object with "type": "object"')
    schema = copy.deepcopy(dict(input_schema))
    listed = schema.get("properties", {})
    if not isinstance(listed, Mapping):
        raise TypeError("input_schema: properties must be an object")
    for name in listed:
        if name not in parameters:
            raise TypeError(f"input_schema: property {name!r} is not a parameter of the function")
    demanded = set(schema.get("required", ()))
    for name, parameter in parameters.items():
        if parameter.required and name not in demanded:
            raise TypeError(
                f"parameter {name!r}: has no default, so input_schema must list it in required"
            )
    return schema


def describe_errors(errors: list[jsonschema.ValidationError]) -> str:
    """One line per error, each naming the argument (the first path element)."""
    lines: list[str] = []
    for error in sorted(errors, key=lambda e: list(map(str, e.absolute_path))):
        path = list(error.absolute_path)
        if not path and error.validator == "required":
            missing = [n for n in error.validator_value if n not in error.instance]
            lines.extend(f"argument {name!r}: required argument is missing" for name in missing)
        elif not path and error.validator == "additionalProperties":
            known = error.schema.get("properties", {})
            extra = sorted(n for n in error.instance if n not in known)
            lines.extend(f"argument {name!r}: unknown argument" for name in extra)
        elif path:
            where = "argument " + repr(path[0]) + "".join(f"[{p!r}]" for p in path[1:])
            lines.append(f"{where}: {_short(error)}")
        else:
            lines.append(_short(error))
    return "; ".join(lines)


def _short(error: jsonschema.ValidationError) -> str:
    # jsonschema repeats the whole offending value; keep messages short.
    message: str = error.message
    return message if len(message) <= 200 else message[:197] + "..."


def is_structured_annotation(annotation: Any) -> bool:
    """Whether a return annotation yields ``outputSchema``/``structuredContent``.

    Structured: attrs classes, dataclasses, pydantic models, TypedDicts,
    dicts, lists, tuples, sets, numbers, bools, Enums, the scalars of
    :mod:`trio_mcp._server._user_types` (``datetime``, ``bytes``, ``UUID``...)
    and unions of those. Not structured: ``str``, ``None``, ``Any``, content
    blocks, a ``CallToolResult``, or no annotation.
    """
    if annotation in (str, None, type(None), Any, inspect.Signature.empty):
        return False
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return all(
            is_structured_annotation(a) or a is type(None) for a in typing.get_args(annotation)
        ) and any(a is not type(None) for a in typing.get_args(annotation))
    if origin in (list, tuple, dict, set, frozenset, typing.Literal) or annotation in (
        list,
        tuple,
        dict,
        set,
        frozenset,
    ):
        if origin is list:
            args = typing.get_args(annotation)
            if args and _is_content_type(args[0]):
                return False
        return True
    if annotation in (int, float, bool):
        return True
    if is_typeddict(annotation):
        return True
    if isinstance(annotation, type):
        if _is_content_type(annotation):
            return False
        return (
            attrs.has(annotation)
            or issubclass(annotation, enum.Enum)
            or dataclasses.is_dataclass(annotation)
            or scalar_form(annotation) is not None
            or is_pydantic_model(annotation)
        )
    return False


def _is_content_type(annotation: Any) -> bool:
    from ..types import content

    names = {"TextContent", "ImageContent", "AudioContent", "ResourceLink", "EmbeddedResource"}
    candidates = typing.get_args(annotation) or (annotation,)
    return any(
        isinstance(c, type) and c.__module__ == content.__name__ and c.__name__ in names
        for c in candidates
    ) or annotation is getattr(content, "ContentBlock", None)


def is_object_schema(schema: Mapping[str, Any]) -> bool:
    """Whether every value valid under *schema* is a JSON object."""
    return schema.get("type") == "object"


_QUICK_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}


def _quick_value_check(schema: Mapping[str, Any]) -> Callable[[Any], bool] | None:
    """A check that returns True only for values *schema* accepts, or None when
    the schema is outside the simple subset (primitive types, enums, anyOf)."""
    # Annotations that never change what is valid ("x-mcp-header" is one: HM-25).
    keys = set(schema) - {"description", "default", "title", "x-mcp-header"}
    if keys == {"type"} and schema["type"] in _QUICK_TYPES:
        kinds = _QUICK_TYPES[schema["type"]]
        # bool is an int subclass, but never a JSON integer or number.
        return lambda v: type(v) in kinds
    if keys == {"type", "minimum", "maximum"} and schema["type"] == "integer":
        # The bounds a Header mark puts on an int (the header-safe range).
        low, high = schema["minimum"], schema["maximum"]
        if type(low) is not int or type(high) is not int:
            return None
        return lambda v: type(v) is int and low <= v <= high
    if keys == {"enum"}:
        allowed = [(type(e), e) for e in schema["enum"] if type(e) in (str, int, bool)]
        if len(allowed) != len(schema["enum"]):
            return None
        return lambda v: any(type(v) is k and v == e for k, e in allowed)
    if keys == {"anyOf"}:
        checks = [_quick_value_check(sub) for sub in schema["anyOf"]]
        if any(c is None for c in checks):
            return None
        ready = [c for c in checks if c is not None]
        return lambda v: any(c(v) for c in ready)
    return None


def quick_object_check(schema: Mapping[str, Any]) -> Callable[[Any], bool] | None:
    """A sound quick check for a tool's input schema whose properties are all
    simple, or None. Exactness matters only one way: True means valid."""
    if schema.get("additionalProperties") is not False:
        return None
    checks = {}
    for name, sub in schema.get("properties", {}).items():
        check = _quick_value_check(sub)
        if check is None:
            return None
        checks[name] = check
    required = tuple(schema.get("required", ()))

    def quick(arguments: Any) -> bool:
        if type(arguments) is not dict:
            return False
        for name in required:
            if name not in arguments:
                return False
        for name, value in arguments.items():
            check = checks.get(name)
            if check is None or not check(value):
                return False
        return True

    return quick
