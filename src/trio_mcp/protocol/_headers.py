"""The request-metadata headers of Streamable HTTP in 2026-07-28, without I/O.

Theory of operation
-------------------
A 2026-07-28 POST mirrors parts of its body into headers, so intermediaries
can route without parsing JSON: ``MCP-Protocol-Version`` (the ``_meta``
version), ``Mcp-Method`` (``method``), ``Mcp-Name`` (``params.name`` or
``params.uri`` of ``tools/call``, ``resources/read`` and ``prompts/get``), and
one ``Mcp-Param-{Name}`` per tool argument whose schema property carries an
``x-mcp-header`` annotation. The body stays the source of truth; a server
refuses any disagreement with 400 and -32020 (HeaderMismatch), since a router
and the server reading different values is a security hole.

This module is the rules, as pure functions both sides use (and one table):

* :func:`encode_header_value` / :func:`decode_header_value`: a value that is
  not plain header-safe ASCII (non-ASCII, controls, leading or trailing
  whitespace) or that looks like the sentinel travels as
  ``=?base64?<base64 of UTF-8>?=`` (HM-20, HM-21);
* :func:`header_annotations`: the ``x-mcp-header`` annotations of a tool's
  ``inputSchema``, or :class:`InvalidHeaderAnnotation` saying why the tool is
  unusable over HTTP (HM-26, HM-27); :class:`ToolHeaderRules` keeps them for
  the tools a client listed, for its transport to read;
* :func:`request_headers`: what a client sends (HM-15, HM-19, HM-25);
* :func:`header_mismatch`: what a server checks, returning the reason for a
  -32020 or None (HM-15, HM-19, HM-21, HM-22, HM-24, HM-28).

Header names are compared case-insensitively, values case-sensitively (HM-24).

Spec: HM-15, HM-19, HM-20, HM-21, HM-22, HM-24, HM-25, HM-26, HM-28.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable, Mapping
from typing import Any, Final, Literal

import attrs

from ._errors import MCPError

#: The Base64 sentinel's markers (lowercase, case-sensitive: HM-20).
SENTINEL_PREFIX: Final = "=?base64?"
SENTINEL_SUFFIX: Final = "?="
#: The methods whose ``params.name`` / ``params.uri`` / ``params.taskId`` goes into ``Mcp-Name``.
NAMED_METHODS: Final = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    # The tasks extension (SEP-2663): Mcp-Name is the task's id.
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}
_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
# RFC 9110 field values we send plain: visible ASCII and space, with no
# whitespace at either end (tab is allowed by the RFC but is whitespace).
_PLAIN = re.compile(r"[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?")
# What a received value may contain at all (RFC 9110 field-value).
_FIELD_VALUE = re.compile(r"[\x20-\x7e\t]*")
# RFC 9110 token (field-name) characters.
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
#: The largest integer an ``x-mcp-header`` argument may hold, either sign (HM-26).
SAFE_INTEGER: Final = 2**53 - 1
# Keywords whose values are JSON data, not subschemas: an "x-mcp-header" key
# inside a default or an example is data, not an annotation.
_DATA_KEYWORDS = frozenset({"default", "const", "enum", "examples"})


class HeaderValueError(ValueError):
    """A received header value has invalid characters or a broken sentinel."""


class InvalidHeaderAnnotation(MCPError, ValueError):
    """A tool's ``x-mcp-header`` annotations break the spec's rules: the tool cannot be
    called over Streamable HTTP (a client drops it).

    :attr:`path` is the chain of keys from the schema root to the offending
    annotation (``properties`` keys, other keywords in angle brackets), so a
    caller can name the parameter; the message says why.

    Spec: HM-27.
    """

    def __init__(self, message: str, path: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.path = path


def encode_header_value(value: str) -> str:
    """*value* as a header value: plain when it is header-safe ASCII and does
    not look like the sentinel, else ``=?base64?...?=`` (HM-20)."""
    looks_encoded = value.startswith(SENTINEL_PREFIX) and value.endswith(SENTINEL_SUFFIX)
    if _PLAIN.fullmatch(value) and not looks_encoded:
        return value
    encoded = base64.b64encode(value.encode("utf-8", "surrogatepass")).decode("ascii")
    return f"{SENTINEL_PREFIX}{encoded}{SENTINEL_SUFFIX}"


def decode_header_value(value: str) -> str:
    """The value a received header carries, the sentinel decoded (HM-21).

    Raises:
        HeaderValueError: characters no header value may hold, or a sentinel
            whose content is not Base64 of UTF-8.
    """
    if not _FIELD_VALUE.fullmatch(value):
        raise HeaderValueError("the header value has characters a header may not carry")
    if not (value.startswith(SENTINEL_PREFIX) and value.endswith(SENTINEL_SUFFIX)):
        return value
    inner = value[len(SENTINEL_PREFIX) : len(value) - len(SENTINEL_SUFFIX)]
    try:
        return base64.b64decode(inner, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        raise HeaderValueError("the Base64 sentinel does not hold Base64 of UTF-8") from None


@attrs.frozen
class HeaderAnnotation:
    """One ``x-mcp-header`` of a tool: ``Mcp-Param-{name}`` mirrors the
    argument at *path* (a chain of ``properties`` keys)."""

    name: str
    path: tuple[str, ...]
    type: Literal["string", "integer", "boolean"]

    @property
    def header(self) -> str:
        return f"Mcp-Param-{self.name}"


def header_annotations(input_schema: Mapping[str, Any]) -> tuple[HeaderAnnotation, ...]:
    """The ``x-mcp-header`` annotations of *input_schema*, in schema order.

    Raises:
        InvalidHeaderAnnotation: one breaks HM-26: not a non-empty token, a
            duplicate (case-insensitively), on a property that is not a
            string, integer or boolean, or not reachable from the root through
            ``properties`` keys alone.

    Spec: HM-26.
    """
    found: list[HeaderAnnotation] = []
    _walk(input_schema, (), True, found)
    seen: set[str] = set()
    for annotation in found:
        key = annotation.name.lower()
        if key in seen:
            raise InvalidHeaderAnnotation(
                f"x-mcp-header {annotation.name!r} at {'/'.join(annotation.path)} is used twice "
                "(names are compared case-insensitively)",
                annotation.path,
            )
        seen.add(key)
    return tuple(found)


class ToolHeaderRules:
    """The ``x-mcp-header`` annotations of the tools a client listed, by name.

    Shared by the client, which learns them from each ``tools/list`` it
    accepts, and a transport that mirrors arguments into ``Mcp-Param-*``
    headers, which reads them for each ``tools/call`` (HM-25).

    Cancellation: no I/O; nothing waits.
    """

    __slots__ = ("_annotations",)

    def __init__(self) -> None:
        self._annotations: dict[str, tuple[HeaderAnnotation, ...]] = {}

    def learn(self, name: str, input_schema: Mapping[str, Any]) -> None:
        """Remember the annotations of tool *name* from its *input_schema*
        (replacing those known by that name).

        Raises:
            InvalidHeaderAnnotation: as :func:`header_annotations`; what was
                known of tool *name* is forgotten, since it cannot be called
                correctly (HM-27).
        """
        try:
            found = header_annotations(input_schema)
        except InvalidHeaderAnnotation:
            self._annotations.pop(name, None)
            raise
        self._annotations[name] = found

    def annotations(self, name: str) -> tuple[HeaderAnnotation, ...]:
        """The annotations of tool *name* as last learned (none if never listed)."""
        return self._annotations.get(name, ())


def _walk(node: Any, path: tuple[str, ...], static: bool, found: list[HeaderAnnotation]) -> None:
    if isinstance(node, list):
        for item in node:
            _walk(item, path, False, found)
        return
    if not isinstance(node, Mapping):
        return
    if "x-mcp-header" in node:
        found.append(_annotation(node, path, static))
    for key, child in node.items():
        if key == "properties" and isinstance(child, Mapping):
            for name, schema in child.items():
                _walk(schema, (*path, str(name)), static, found)
        elif key != "x-mcp-header" and key not in _DATA_KEYWORDS:
            # Anything below another keyword (items, oneOf, $ref, if, ...) is
            # not statically reachable: only a chain of properties keys is.
            _walk(child, (*path, f"<{key}>"), False, found)


def _annotation(node: Mapping[str, Any], path: tuple[str, ...], static: bool) -> HeaderAnnotation:
    name = node["x-mcp-header"]
    where = "/".join(path) or "(root)"
    if not isinstance(name, str) or not _TOKEN.fullmatch(name):
        raise InvalidHeaderAnnotation(
            f"x-mcp-header at {where} must be a non-empty HTTP token "
            f"(RFC 9110 tchar: no space, control or delimiter), not {name!r}",
            path,
        )
    if not static or not path:
        raise InvalidHeaderAnnotation(
            f"x-mcp-header {name!r} is not reachable through properties alone ({where}): "
            "not at the root, nor under items, composition, conditionals, $defs or $ref",
            path,
        )
    kind = node.get("type")
    if kind not in ("string", "integer", "boolean"):
        nullable = " (a nullable property has no single type)" if "anyOf" in node else ""
        raise InvalidHeaderAnnotation(
            f"x-mcp-header {name!r} at {where} is on a {kind!r} property{nullable}; only "
            "string, integer and boolean may be mirrored",
            path,
        )
    return HeaderAnnotation(name, path, kind)


def _argument(arguments: Any, path: tuple[str, ...]) -> Any:
    node = arguments
    for key in path:
        if not isinstance(node, Mapping) or key not in node:
            return None
        node = node[key]
    return node


def _header_form(value: Any, kind: str) -> str | None:
    """The text of an argument as its header carries it, None when it has none."""
    if value is None:
        return None
    if kind == "boolean":
        return "true" if value is True else "false" if value is False else None
    if kind == "integer":
        if isinstance(value, bool) or not isinstance(value, int):
            return None
        return str(value) if abs(value) <= SAFE_INTEGER else None
    return value if isinstance(value, str) else None


def request_headers(
    method: str,
    params: Mapping[str, Any] | None,
    annotations: Iterable[HeaderAnnotation] = (),
) -> dict[str, str]:
    """The metadata headers a client sends with a 2026-07-28 request (HM-15,
    HM-19, HM-20, HM-25): the version from ``_meta``, the method, the name of
    a named method, and each annotated argument that has a value.

    Spec: HM-15, HM-19, HM-20, HM-25.
    """
    params = params or {}
    headers: dict[str, str] = {}
    meta = params.get("_meta")
    version = meta.get(_VERSION_KEY) if isinstance(meta, Mapping) else None
    if isinstance(version, str):
        headers["MCP-Protocol-Version"] = version
    headers["Mcp-Method"] = method
    field = NAMED_METHODS.get(method)
    name = params.get(field) if field is not None else None
    if isinstance(name, str):
        headers["Mcp-Name"] = encode_header_value(name)
    for annotation in annotations:
        text = _header_form(_argument(params.get("arguments"), annotation.path), annotation.type)
        if text is not None:
            headers[annotation.header] = encode_header_value(text)
    return headers


def _lowered(headers: Mapping[str, str] | Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    pairs = headers.items() if isinstance(headers, Mapping) else headers
    seen: dict[str, list[str]] = {}
    for name, value in pairs:
        seen.setdefault(name.lower(), []).append(value)
    return seen


def _matches(header: str, body: Any, kind: str) -> bool:
    if kind == "integer":
        # Compared as numbers (HM-22): "42.0" and 42 agree.
        try:
            return isinstance(body, int) and not isinstance(body, bool) and float(header) == body
        except ValueError:
            return False
    return header == _header_form(body, kind)


def header_mismatch(
    headers: Mapping[str, str] | Iterable[tuple[str, str]],
    method: str,
    params: Mapping[str, Any] | None,
    annotations: Iterable[HeaderAnnotation] = (),
) -> str | None:
    """Why a server must refuse a 2026-07-28 request's headers (400 and
    -32020), or None when they agree with the body.

    *headers* are the received ones (names in any case; a repeated header is a
    mismatch); *annotations* those of the called tool. A body without a
    ``_meta`` version is not judged on its version header: it lacks a required
    field, a -32602 of its own (ME-07).

    Spec: HM-15, HM-19, HM-21, HM-22, HM-24, HM-28.
    """
    received = _lowered(headers)

    def one(name: str) -> str | None:
        values = received.get(name.lower())
        if values is None:
            return None
        if len(values) > 1:
            raise HeaderValueError(f"{name} is sent more than once")
        return values[0]

    params = params or {}
    try:
        meta = params.get("_meta")
        version = meta.get(_VERSION_KEY) if isinstance(meta, Mapping) else None
        sent_version = one("MCP-Protocol-Version")
        if sent_version is None:
            return "the MCP-Protocol-Version header is missing"
        # A body that names no version is refused for that, as missing _meta
        # (-32602, ME-07), by whoever reads the body next: it is not a mismatch.
        if isinstance(version, str) and sent_version != version:
            return (
                f"MCP-Protocol-Version {sent_version[:64]!r} does not match the body's {version!r}"
            )
        sent_method = one("Mcp-Method")
        if sent_method is None:
            return "the Mcp-Method header is missing"
        if sent_method != method:
            return f"Mcp-Method {sent_method[:64]!r} does not match the body's {method!r}"
        field = NAMED_METHODS.get(method)
        if field is not None:
            sent_name = one("Mcp-Name")
            if sent_name is None:
                return "the Mcp-Name header is missing"
            if decode_header_value(sent_name) != params.get(field):
                return f"Mcp-Name does not match the body's params.{field}"
        arguments = params.get("arguments")
        for annotation in annotations:
            sent = one(annotation.header)
            body = _argument(arguments, annotation.path)
            if sent is None:
                if body is not None:
                    return f"the {annotation.header} header is missing"
                continue
            if body is None or not _matches(decode_header_value(sent), body, annotation.type):
                return f"{annotation.header} does not match the body's argument"
    except HeaderValueError as exc:
        return str(exc)
    return None
