"""Registration options that are spec objects: accepted as the object or as its
JSON form, converted once, and checked before anything is registered.

Where the spec has an object in a definition (a tool's ``annotations``, the
``icons`` of a tool, resource or prompt, a resource's ``annotations``), the
registration methods take either the :mod:`trio_mcp.types` class or the dict
the spec shows (camelCase keys: ``{"readOnlyHint": True}``), as the official
SDK does. A dict is structured here, once, by the wire converter in strict
mode, so a misspelt or snake_case key is refused rather than dropped. Anything
else is a ``TypeError`` naming the type expected.

The finished definition is then serialised once (:func:`check_definition`),
so that a value with no JSON form (an object in ``meta``, a field of the wrong
kind) fails the registration that brought it, never a later ``tools/list``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

import cattrs
import orjson

from ..types._converter import converter, strict_converter

T = TypeVar("T")


def _expected(cls: type[Any]) -> str:
    return (
        f"a trio_mcp.types.{cls.__name__} or its JSON form (a dict with the spec's camelCase keys)"
    )


def spec_object(owner: str, option: str, value: Any, cls: type[T]) -> T | None:
    """*value* as a *cls*: None and a *cls* pass as they are, a dict in the
    spec's JSON form is converted.

    Raises:
        TypeError: *value* is neither, or the dict does not fit *cls* (an
            unknown key, a value of the wrong type); the message names
            *owner*, *option* and the type expected.
    """
    if value is None or isinstance(value, cls):
        return value
    if isinstance(value, Mapping):
        try:
            return strict_converter.structure(dict(value), cls)
        except Exception as exc:
            reasons = (
                cattrs.transform_error(exc)
                if isinstance(exc, cattrs.BaseValidationError)
                else [str(exc)]
            )
            raise TypeError(
                f"{owner}: {option} must be {_expected(cls)}, and this dict does not fit: "
                + "; ".join(reasons)
            ) from None
    raise TypeError(f"{owner}: {option} must be {_expected(cls)}, not {type(value).__name__}")


def spec_objects(owner: str, option: str, value: Any, cls: type[T]) -> list[T] | None:
    """A list of *cls* (see :func:`spec_object`), or None.

    Raises:
        TypeError: *value* is not a list or tuple, or an item does not fit.
    """
    if value is None:
        return None
    if not isinstance(value, list | tuple):
        raise TypeError(
            f"{owner}: {option} must be a list of trio_mcp.types.{cls.__name__} (or of their "
            f"JSON form), not {type(value).__name__}"
        )
    items = [spec_object(owner, f"{option}[{i}]", item, cls) for i, item in enumerate(value)]
    return [item for item in items if item is not None]


def json_object(owner: str, option: str, value: Any) -> dict[str, Any] | None:
    """*value* as a JSON object (``meta``), or None.

    Raises:
        TypeError: *value* is not a dict with string keys.
    """
    if value is None:
        return None
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise TypeError(
            f"{owner}: {option} must be a dict with string keys, not {type(value).__name__}"
        )
    return dict(value)


def check_definition(owner: str, definition: object) -> None:
    """Serialise *definition* once, as every list of it will be.

    Raises:
        TypeError: it has no JSON form; the message names *owner*.
    """
    try:
        orjson.dumps(converter.unstructure(definition))
    except Exception as exc:
        raise TypeError(
            f"{owner}: the definition cannot be sent as JSON ({exc}); check the values "
            "given for meta, annotations and icons"
        ) from None
