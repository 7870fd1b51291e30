"""Tool input schemas from Python signatures, and argument binding.

A small generator over a closed set of types (str, int, float, bool, None,
list[T], dict[str, T], Literal, unions of these); a parameter annotated with the
context type is injected and left out of the schema. Binding checks each
argument against its annotation and says which argument is wrong and why.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

import attrs

_PRIMITIVES: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


def type_schema(annotation: Any) -> dict[str, Any]:
    """JSON Schema for one annotation from the supported set.

    Raises:
        TypeError: the annotation is outside the supported set.
    """
    if annotation in _PRIMITIVES:
        return {"type": _PRIMITIVES[annotation]}
    if annotation is None or annotation is type(None):
        return {"type": "null"}
    if annotation is Any:
        return {}
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Literal:
        return {"enum": list(args)}
    if origin in (typing.Union, types.UnionType):
        return {"anyOf": [type_schema(arg) for arg in args]}
    if origin is list or annotation is list:
        return {"type": "array", **({"items": type_schema(args[0])} if args else {})}
    if origin is dict or annotation is dict:
        extra = {"additionalProperties": type_schema(args[1])} if len(args) == 2 else {}
        return {"type": "object", **extra}
    raise TypeError(f"unsupported parameter type {annotation!r}")


def check_value(annotation: Any, value: Any, path: str) -> None:
    """Raise ValueError (naming *path*) if *value* does not fit *annotation*."""
    if annotation is Any:
        return
    if annotation in _PRIMITIVES:
        if annotation is float:
            ok = type(value) in (int, float)
        elif annotation is int:
            ok = type(value) is int
        else:
            ok = type(value) is annotation
        if not ok:
            raise ValueError(f"{path}: expected {_PRIMITIVES[annotation]}, got {_json_kind(value)}")
        return
    if annotation is None or annotation is type(None):
        if value is not None:
            raise ValueError(f"{path}: expected null, got {_json_kind(value)}")
        return
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Literal:
        if value not in args or type(value) not in {type(a) for a in args}:
            raise ValueError(f"{path}: expected one of {list(args)!r}, got {value!r}")
        return
    if origin in (typing.Union, types.UnionType):
        for arg in args:
            try:
                check_value(arg, value, path)
                return
            except ValueError:
                continue
        raise ValueError(f"{path}: {_json_kind(value)} matches none of the allowed types")
    if origin is list or annotation is list:
        if not isinstance(value, list):
            raise ValueError(f"{path}: expected array, got {_json_kind(value)}")
        if args:
            for index, item in enumerate(value):
                check_value(args[0], item, f"{path}[{index}]")
        return
    if origin is dict or annotation is dict:
        if not isinstance(value, dict):
            raise ValueError(f"{path}: expected object, got {_json_kind(value)}")
        if len(args) == 2:
            for key, item in value.items():
                check_value(args[1], item, f"{path}.{key}")
        return
    raise ValueError(f"{path}: cannot check values of type {annotation!r}")


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


@attrs.frozen
class ToolSignature:
    """What a tool function accepts: its JSON Schema and how to bind arguments."""

    input_schema: dict[str, Any]
    #: name -> (annotation, required)
    parameters: Mapping[str, tuple[Any, bool]]
    context_parameter: str | None

    @classmethod
    def from_function(cls, fn: Callable[..., Any], *, context_type: type) -> ToolSignature:
        hints = typing.get_type_hints(fn)
        properties: dict[str, Any] = {}
        required: list[str] = []
        parameters: dict[str, tuple[Any, bool]] = {}
        context_parameter = None
        for name, param in inspect.signature(fn).parameters.items():
            annotation = hints.get(name, Any)
            if annotation is context_type:
                context_parameter = name
                continue
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise TypeError(f"tool parameters must be named, not *{name}")
            schema = type_schema(annotation)
            is_required = param.default is inspect.Parameter.empty
            if not is_required and (param.default is None or type(param.default) in _PRIMITIVES):
                schema = {**schema, "default": param.default}
            properties[name] = schema
            parameters[name] = (annotation, is_required)
            if is_required:
                required.append(name)
        input_schema: dict[str, Any] = {"type": "object", "properties": properties}
        if required:
            input_schema["required"] = required
        return cls(input_schema, parameters, context_parameter)

    def bind(self, arguments: Mapping[str, Any], context: Any) -> dict[str, Any]:
        """Keyword arguments for the call.

        Raises:
            ValueError: an argument is missing, unknown, or of the wrong type.
        """
        unknown = sorted(set(arguments) - set(self.parameters))
        if unknown:
            raise ValueError(f"unknown argument(s): {', '.join(unknown)}")
        kwargs: dict[str, Any] = {}
        for name, (annotation, required) in self.parameters.items():
            if name not in arguments:
                if required:
                    raise ValueError(f"{name}: required argument is missing")
                continue
            check_value(annotation, arguments[name], name)
            kwargs[name] = arguments[name]
        if self.context_parameter is not None:
            kwargs[self.context_parameter] = context
        return kwargs
