"""Elicitation on the client side: what the server may ask, and checking the answer.

Form mode: the requested schema must be the flat object of primitive properties
the spec allows (EL-04); anything else (nesting, ``$ref``, unknown keywords or
types) is refused with -32602 before the application sees it. The application's
answer is checked against that schema before it is sent (EL-17); defaults from
the schema are applied to missing fields when the application asks (EL-05).

URL mode (2025-11-25): the URL is never opened, fetched or prefetched here
(EL-12). The application gets it with its origin and display host (punycode
decoded, flagged) and decides; only ``http``/``https`` URLs are handed over
(``http`` only to loopback), and none a browser would read as another host
than the one shown (backslashes, control characters, whitespace, credentials).
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import attrs
import jsonschema  # type: ignore[import-untyped]  # no stubs installed
import orjson

from .. import types as mcp_types
from .._errors import MCPError

__all__ = [
    "ElicitationSchemaError",
    "FormElicitation",
    "URLElicitation",
    "check_form_schema",
    "check_form_answer",
    "url_elicitation",
]

# Keywords a property may carry, by kind (schema.ts PrimitiveSchemaDefinition).
_ANNOTATIONS = frozenset({"title", "description", "default"})
_STRING = _ANNOTATIONS | {"type", "minLength", "maxLength", "format"}
_STRING_ENUM = _ANNOTATIONS | {"type", "enum", "enumNames"}
_STRING_ONE_OF = _ANNOTATIONS | {"type", "oneOf"}
_NUMBER = _ANNOTATIONS | {"type", "minimum", "maximum"}
_BOOLEAN = _ANNOTATIONS | {"type"}
_ARRAY = _ANNOTATIONS | {"type", "items", "minItems", "maxItems"}
_FORMATS = frozenset({"email", "uri", "date", "date-time"})
_ROOT = frozenset({"type", "properties", "required", "title", "description", "$schema"})


class ElicitationSchemaError(MCPError):
    """A form elicitation's ``requestedSchema`` is outside the spec's flat subset.

    ``errors`` lists each problem with its property path.
    """

    def __init__(self, errors: list[str]) -> None:
        super().__init__("requestedSchema is not a flat primitive schema: " + "; ".join(errors))
        self.errors = errors


def _check_const_options(options: Any, where: str, errors: list[str]) -> None:
    if not isinstance(options, list) or not options:
        errors.append(f"{where}: must be a non-empty list of {{const, title}}")
        return
    for i, option in enumerate(options):
        if (
            not isinstance(option, dict)
            or not isinstance(option.get("const"), str)
            or not set(option) <= {"const", "title"}
            or not isinstance(option.get("title", ""), str)
        ):
            errors.append(f"{where}[{i}]: must be {{const: string, title?: string}}")


def _check_property(name: str, prop: Any, errors: list[str]) -> None:
    where = f"properties.{name}"
    if not isinstance(prop, dict):
        errors.append(f"{where}: must be an object")
        return
    kind = prop.get("type")
    if kind == "string":
        if "enum" in prop:
            allowed = _STRING_ENUM
            enum = prop["enum"]
            if not isinstance(enum, list) or not enum or not all(isinstance(v, str) for v in enum):
                errors.append(f"{where}.enum: must be a non-empty list of strings")
            names = prop.get("enumNames")
            if names is not None and (
                not isinstance(names, list)
                or len(names) != len(enum if isinstance(enum, list) else [])
                or not all(isinstance(v, str) for v in names)
            ):
                errors.append(f"{where}.enumNames: must be strings, one per enum value")
        elif "oneOf" in prop:
            allowed = _STRING_ONE_OF
            _check_const_options(prop["oneOf"], f"{where}.oneOf", errors)
        else:
            allowed = _STRING
            fmt = prop.get("format")
            if fmt is not None and fmt not in _FORMATS:
                errors.append(f"{where}.format: {fmt!r} is not one of {sorted(_FORMATS)}")
    elif kind in ("number", "integer"):
        allowed = _NUMBER
    elif kind == "boolean":
        allowed = _BOOLEAN
    elif kind == "array":
        # Only the multi-select enum (2025-11-25): items are an enum of strings.
        allowed = _ARRAY
        items = prop.get("items")
        if not isinstance(items, dict):
            errors.append(f"{where}.items: a multi-select needs an items object")
        elif "anyOf" in items:
            if set(items) - {"anyOf"}:
                errors.append(f"{where}.items: only anyOf is allowed beside it")
            _check_const_options(items["anyOf"], f"{where}.items.anyOf", errors)
        elif (
            items.get("type") != "string"
            or set(items) - {"type", "enum"}
            or not isinstance(items.get("enum"), list)
            or not all(isinstance(v, str) for v in items["enum"])
        ):
            errors.append(f"{where}.items: must be {{type: string, enum: [strings]}} or anyOf")
    else:
        errors.append(f"{where}.type: {kind!r} is not a primitive type")
        return
    extra = sorted(set(prop) - allowed)
    if extra:
        errors.append(f"{where}: keywords not allowed in an elicitation form: {extra}")


def check_form_schema(schema: Any) -> None:
    """Check that *schema* is the flat, primitive-only object schema of EL-04.

    Raises:
        ElicitationSchemaError: with every problem found.

    Spec: EL-04.
    """
    errors: list[str] = []
    if not isinstance(schema, dict):
        raise ElicitationSchemaError(["the schema must be an object"])
    if schema.get("type") != "object":
        errors.append('type: must be "object"')
    extra = sorted(set(schema) - _ROOT)
    if extra:
        errors.append(f"keywords not allowed at the root: {extra}")
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        errors.append("properties: must be an object")
        properties = {}
    for name, prop in properties.items():
        _check_property(name, prop, errors)
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        errors.append("required: must be a list of property names")
    else:
        for name in required:
            if name not in properties:
                errors.append(f"required: {name!r} is not a property")
    if errors:
        raise ElicitationSchemaError(errors)


@functools.lru_cache(maxsize=128)
def _validator(schema_json: bytes) -> jsonschema.protocols.Validator:
    schema = orjson.loads(schema_json)
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(schema, format_checker=jsonschema.FormatChecker())


def check_form_answer(schema: Mapping[str, Any], content: Any) -> list[str]:
    """Problems with *content* as an answer to *schema* (empty: valid).

    The schema must already have passed :func:`check_form_schema`. Values must
    be strings, numbers, booleans or lists of strings (EL-07); validators are
    cached by schema.

    Spec: EL-07, EL-17.
    """
    if not isinstance(content, dict):
        return ["the answer must be an object"]
    problems = [
        f"{key}: {type(value).__name__} is not a primitive value"
        for key, value in content.items()
        if not (
            isinstance(value, str | int | float | bool)
            or (isinstance(value, list) and all(isinstance(v, str) for v in value))
        )
    ]
    if problems:
        return problems
    validator = _validator(orjson.dumps(schema, option=orjson.OPT_SORT_KEYS))
    return [
        f"{'.'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}"
        for e in sorted(validator.iter_errors(content), key=lambda e: list(e.absolute_path))
    ]


@attrs.frozen
class FormElicitation:
    """A form-mode ``elicitation/create``, as handed to the application.

    ``schema`` passed the flat-schema check. ``defaults`` are the schema's ``default``
    values, for pre-filling a form.

    Spec: EL-05.
    """

    message: str
    schema: mcp_types.JSONObject
    #: Name of the server that asks (show who is asking).
    #:
    #: Spec: EL-11.
    server_name: str
    params: mcp_types.ElicitRequestFormParams

    @property
    def defaults(self) -> dict[str, Any]:
        properties: dict[str, Any] = self.schema.get("properties") or {}  # type: ignore[assignment]
        return {k: p["default"] for k, p in properties.items() if "default" in p}

    @property
    def required(self) -> list[str]:
        return list(self.schema.get("required") or [])  # type: ignore[arg-type]

    def with_defaults(self, content: Mapping[str, Any]) -> dict[str, Any]:
        """*content* with every missing field filled from the schema's defaults."""
        return {**self.defaults, **content}


@attrs.frozen
class URLElicitation:
    """A URL-mode ``elicitation/create`` (2025-11-25), as handed to the application.

    Nothing here opens or fetches the URL. Show :attr:`url` in full and :attr:`host`
    (Unicode form of the domain; :attr:`punycode` says the domain is internationalized,
    a phishing risk worth a warning) before asking consent. Accepting means consent to
    open it, not that the interaction is complete. Open it without a shell
    (``webbrowser``, not ``os.system``).

    Spec: EL-12.
    """

    message: str
    url: str
    elicitation_id: str
    #: ``scheme://host[:port]`` with the host in ASCII (punycode) form: the
    #: origin a browser opens, which a look-alike Unicode host cannot fake.
    origin: str
    #: The host in Unicode (punycode decoded); IPv6 addresses without brackets.
    host: str
    #: The host is an internationalized domain name (``xn--`` labels or
    #: non-ASCII characters).
    punycode: bool
    server_name: str


def _unsafe_character(url: str) -> str | None:
    """Why *url* holds a character a browser would read differently, if it does."""
    if "\\" in url:
        # WHATWG URL parsing reads "\" as "/" in http(s) URLs; urlsplit does
        # not, so "https://evil.example\@trusted.example/" would be shown with
        # the host trusted.example while the browser opens evil.example.
        return "url contains a backslash, which browsers read as '/'"
    for char in url:
        # Browsers drop tabs and newlines anywhere and strip leading and
        # trailing controls and spaces; a valid URL never holds either raw.
        if char < " " or char == "\x7f" or char.isspace():
            return f"url contains a control or whitespace character (U+{ord(char):04X})"
    return None


def _is_loopback(hostname: str) -> bool:
    if hostname == "localhost":
        return True
    try:
        return ipaddress.ip_address(hostname).is_loopback
    except ValueError:
        return False


def url_elicitation(
    params: mcp_types.ElicitRequestURLParams, server_name: str
) -> URLElicitation | str:
    """The :class:`URLElicitation` for *params*, or why the URL is refused.

    Only absolute ``http``/``https`` URLs with a host are accepted, and ``http`` only to
    a loopback host (``localhost``, 127.0.0.0/8, ``::1``). Refused, never shown as a
    link: other schemes (``javascript:``, ``file:``, ``data:``, ``vbscript:``...); URLs
    a browser would parse to another host than the one shown (a backslash, ASCII control
    characters or any whitespace anywhere, a percent-encoded host); credentials
    (``user:pass@``, the ``trusted@evil`` spoof); an invalid port or internationalized
    name. The reason returned is sent to the server in the -32602 error. The checks
    follow the 2025-11-25 security best practices on server-supplied URLs.

    Spec: EL-06, EL-12, X-04.
    """
    url = params.url
    unsafe = _unsafe_character(url)
    if unsafe is not None:
        return unsafe
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        return f"invalid url: {exc}"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "url must be an absolute http or https URL"
    if "@" in parts.netloc:
        return "url must not contain credentials (user:password@)"
    hostname = parts.hostname  # lower-cased by urlsplit
    if "%" in hostname:
        # Browsers percent-decode the host before IDNA, so the host shown here
        # would not be the one opened (and an IDN would escape the flag).
        return "url host must not be percent-encoded"
    if parts.scheme == "http" and not _is_loopback(hostname):
        return "plain http is allowed only to a loopback host (localhost, 127.0.0.0/8, ::1)"
    ipv6 = ":" in hostname
    punycode = not ipv6 and (
        not hostname.isascii() or any(label.startswith("xn--") for label in hostname.split("."))
    )
    try:
        # Round trip through IDNA: the ASCII form is what a browser opens (it
        # also maps look-alike dots such as U+3002), the Unicode form is shown.
        ascii_host = hostname.encode("idna").decode("ascii") if punycode else hostname
        host = ascii_host.encode("ascii").decode("idna") if punycode else hostname
    except UnicodeError:
        return "url has an invalid internationalized domain name"
    origin_host = f"[{ascii_host}]" if ipv6 else ascii_host
    origin = f"{parts.scheme}://{origin_host}" + (f":{port}" if port is not None else "")
    return URLElicitation(
        message=params.message,
        url=url,
        elicitation_id=params.elicitation_id,
        origin=origin,
        host=host,
        punycode=punycode,
        server_name=server_name,
    )
