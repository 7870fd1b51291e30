"""JSON Schemas from Python annotations, validation, and structuring.

A small generator over a closed set of types: ``str``, ``int``, ``float``,
``bool``, ``None``, ``Any``, ``list[T]``, ``dict[str, T]``, ``tuple[...]``,
``Literal[...]``, ``Enum`` subclasses, unions, attrs classes and ``TypedDict``.
Anything else is refused when the tool is registered (a ``TypeError`` naming the
parameter), never when it is called.

Schemas are JSON Schema 2020-12 (the default dialect, JS-01) with no ``$schema``
keyword; arguments are validated with ``jsonschema``'s 2020-12 validator, built
once per tool (JS-02, JS-04), and then structured into the annotated types with
a plain cattrs converter (user attrs classes keep their Python field names on
the wire; only the protocol's own types are camelCased).

Spec: TL-06, TL-07, TL-20, JS-01, JS-02, JS-04.
"""

from __future__ import annotations

import enum
import inspect
import re
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, is_typeddict

import attrs
import cattrs
import jsonschema  # type: ignore[import-untyped]  # no stubs installed

_PRIMITIVES: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}

#: The converter for user types (attrs classes, Enums, tuples, TypedDicts).
user_converter = cattrs.Converter()

#: The validator class for every generated schema (JS-01: 2020-12 is the default).
Validator = jsonschema.Draft202012Validator


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
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return {"enum": [member.value for member in annotation]}
    if isinstance(annotation, type) and attrs.has(annotation):
        return _attrs_schema(annotation, _seen | {annotation})
    if is_typeddict(annotation):
        return _typeddict_schema(annotation, _seen | {annotation})
    raise TypeError(f"unsupported type {annotation!r}")


def _attrs_schema(cls: type, seen: frozenset[Any]) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
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
    hints = typing.get_type_hints(cls)
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
    validator: Any
    #: True when no argument needs converting (the fast path).
    plain: bool
    #: A sound pre-check of the arguments (True: valid), or None.
    quick_check: Callable[[Any], bool] | None = None

    @classmethod
    def from_function(
        cls, fn: Callable[..., Any], *, context_types: tuple[Any, ...]
    ) -> FunctionSignature:
        """Build the signature of *fn*.

        Raises:
            TypeError: a parameter is ``*args``/``**kwargs`` or has an
                unsupported annotation (the message names it).
        """
        hints = typing.get_type_hints(fn, include_extras=False)
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
                schema = dict(type_schema(annotation))
            except TypeError as exc:
                raise TypeError(f"parameter {name!r}: {exc}") from None
            is_required = param.default is inspect.Parameter.empty
            if not is_required:
                try:
                    default = user_converter.unstructure(param.default)
                    Validator(schema).validate(default)
                    schema["default"] = default
                except Exception:  # a default outside the schema is simply not advertised
                    pass
            if name in docs:
                schema["description"] = docs[name]
            properties[name] = schema
            parameters[name] = Parameter(name, annotation, is_required, make_structurer(annotation))
            if is_required:
                required.append(name)
        input_schema: dict[str, Any] = {
            "type": "object",
            "properties": properties,
            "additionalProperties": False,
        }
        if required:
            input_schema["required"] = required
        Validator.check_schema(input_schema)
        plain = all(p.structure is None for p in parameters.values())
        return cls(
            input_schema,
            parameters,
            context_parameters,
            description,
            Validator(input_schema),
            plain,
            quick_object_check(input_schema),
        )

    def bind(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Validated, structured keyword arguments (context parameters not included).

        Raises:
            ValueError: the arguments do not match the schema; the message names
                the argument and says why.
        """
        if not isinstance(arguments, Mapping):
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
            structure = self.parameters[name].structure
            try:
                kwargs[name] = value if structure is None else structure(value)
            except Exception as exc:
                raise ValueError(f"argument {name!r}: {_first_line(exc)}") from None
        return kwargs


def _first_line(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text.splitlines()[0]


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

    Structured: attrs classes, TypedDicts, dicts, lists, tuples, numbers, bools,
    Enums and unions of those. Not structured: ``str``, ``None``, ``Any``,
    content blocks, a ``CallToolResult``, or no annotation.
    """
    if annotation in (str, None, type(None), Any, inspect.Signature.empty):
        return False
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return all(
            is_structured_annotation(a) or a is type(None) for a in typing.get_args(annotation)
        ) and any(a is not type(None) for a in typing.get_args(annotation))
    if origin in (list, tuple, dict, typing.Literal) or annotation in (list, tuple, dict):
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
        return attrs.has(annotation) or issubclass(annotation, enum.Enum)
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
    keys = set(schema) - {"description", "default", "title"}
    if keys == {"type"} and schema["type"] in _QUICK_TYPES:
        kinds = _QUICK_TYPES[schema["type"]]
        # bool is an int subclass, but never a JSON integer or number.
        return lambda v: type(v) in kinds
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
