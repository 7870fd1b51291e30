"""RFC 6570 URI templates as MCP uses them: expansion and linear-time matching.

``resources/templates/list`` advertises templates; ``resources/read`` then gets
a concrete URI that must be matched back to a template and its variables. All
eight operators are understood (``{x}``, ``{+x}``, ``{#x}``, ``{.x}``,
``{/x}``, ``{;x}``, ``{?x,y}``, ``{&x}``), with the ``*`` explode and ``:n``
prefix modifiers.

Matching never uses a regular expression: the template is a list of literals
and expressions, and the URI is scanned once from left to right. An expression
extends to the next occurrence of the literal (or operator prefix) that follows
it, and the last one before a trailing literal extends to that suffix, so a
hostile URI costs O(len(uri) x parts), never exponential backtracking.
Simple (``{x}``) values may not contain reserved characters such as ``/``;
``{+x}`` and ``{#x}`` may. Values are percent-decoded.

Spec: RS-02 (RFC 6570 templates), RS-15 (URIs are validated).
"""

from __future__ import annotations

from typing import Final
from urllib.parse import quote, unquote

import attrs

#: operator -> (prefix, separator, named, allow reserved characters)
_OPERATORS: Final = {
    "": ("", ",", False, False),
    "+": ("", ",", False, True),
    "#": ("#", ",", False, True),
    ".": (".", ".", False, False),
    "/": ("/", "/", False, False),
    ";": (";", ";", True, False),
    "?": ("?", "&", True, False),
    "&": ("&", "&", True, False),
}

#: Characters a simple (unreserved-only) value may not contain once matched.
_RESERVED: Final = frozenset(":/?#[]@!$&'()*+,;=")
_MAX_URI: Final = 8192

Values = dict[str, "str | list[str]"]


@attrs.frozen
class _Var:
    name: str
    explode: bool
    prefix: int | None


@attrs.frozen
class _Expr:
    operator: str
    variables: tuple[_Var, ...]


Part = str | _Expr


@attrs.frozen
class UriTemplate:
    """A parsed URI template. Build with :meth:`parse`."""

    text: str
    parts: tuple[Part, ...]

    @classmethod
    def parse(cls, text: str) -> UriTemplate:
        """Parse *text*.

        Raises:
            ValueError: unbalanced braces, an empty or invalid variable name, or
                a variable used twice.
        """
        parts: list[Part] = []
        seen: set[str] = set()
        pos = 0
        while pos < len(text):
            start = text.find("{", pos)
            close = text.find("}", pos)
            if start < 0:
                if close >= 0:
                    raise ValueError(f"unbalanced '}}' in URI template {text!r}")
                parts.append(text[pos:])
                break
            if 0 <= close < start:
                raise ValueError(f"unbalanced '}}' in URI template {text!r}")
            if start > pos:
                parts.append(text[pos:start])
            end = text.find("}", start)
            if end < 0 or "{" in text[start + 1 : end]:
                raise ValueError(f"unbalanced '{{' in URI template {text!r}")
            body = text[start + 1 : end]
            operator = body[:1] if body[:1] in _OPERATORS and body[:1] != "" else ""
            names = body[len(operator) :]
            variables = []
            for spec in names.split(","):
                variable = _parse_var(spec, text)
                if variable.name in seen:
                    raise ValueError(f"variable {variable.name!r} used twice in {text!r}")
                seen.add(variable.name)
                variables.append(variable)
            parts.append(_Expr(operator, tuple(variables)))
            pos = end + 1
        return cls(text, tuple(parts))

    @property
    def variables(self) -> list[str]:
        """Variable names, in template order."""
        return [v.name for p in self.parts if isinstance(p, _Expr) for v in p.variables]

    def expand(self, values: Values) -> str:
        """The URI for *values* (missing variables expand to nothing)."""
        out: list[str] = []
        for part in self.parts:
            if isinstance(part, str):
                out.append(part)
                continue
            prefix, sep, named, reserved = _OPERATORS[part.operator]
            safe = ":/?#[]@!$&'()*+,;=" if reserved else ""
            pieces: list[str] = []
            for var in part.variables:
                value = values.get(var.name)
                if value is None:
                    continue
                items = value if isinstance(value, list) else [value]
                if var.prefix is not None:
                    items = [item[: var.prefix] for item in items]
                encoded = [quote(item, safe=safe) for item in items]
                joiner = sep if var.explode else ","
                if named:
                    if var.explode:
                        pieces.extend(f"{var.name}={e}" for e in encoded)
                    else:
                        pieces.append(f"{var.name}={joiner.join(encoded)}")
                else:
                    pieces.append(joiner.join(encoded))
            if pieces:
                out.append(prefix + sep.join(pieces))
        return "".join(out)

    def match(self, uri: str) -> Values | None:
        """The variables if *uri* matches this template, else None. Linear time."""
        if len(uri) > _MAX_URI:
            return None
        values: Values = {}
        pos = 0
        parts = self.parts
        count = len(parts)
        for index, part in enumerate(parts):
            if isinstance(part, str):
                if not uri.startswith(part, pos):
                    return None
                pos += len(part)
                continue
            end = self._region_end(uri, pos, index)
            if end is None or end < pos:
                return None
            if not _match_expr(part, uri[pos:end], values):
                return None
            pos = end
        return values if pos == len(uri) or (count == 0 and uri == "") else None

    def _region_end(self, uri: str, pos: int, index: int) -> int | None:
        parts = self.parts
        if index + 1 == len(parts):
            return len(uri)
        following = parts[index + 1]
        if isinstance(following, str):
            if index + 2 == len(parts):
                # The last literal anchors the end: "{path}.txt" matches "a.b.txt".
                if not uri.endswith(following):
                    return None
                return len(uri) - len(following)
            found = uri.find(following, pos)
            return None if found < 0 else found
        prefix = _OPERATORS[following.operator][0]
        if prefix:
            found = uri.find(prefix, pos)
            return len(uri) if found < 0 else found
        return len(uri)


def _parse_var(spec: str, template: str) -> _Var:
    explode = spec.endswith("*")
    name = spec[:-1] if explode else spec
    prefix: int | None = None
    if ":" in name:
        name, _, length = name.partition(":")
        if not length.isdigit() or not 0 < int(length) < 10000:
            raise ValueError(f"invalid prefix modifier in {template!r}")
        prefix = int(length)
    if not name or not all(c.isalnum() or c in "_." or c == "%" for c in name):
        raise ValueError(f"invalid variable name {spec!r} in {template!r}")
    return _Var(name, explode, prefix)


def _match_expr(expr: _Expr, region: str, values: Values) -> bool:
    prefix, sep, named, reserved = _OPERATORS[expr.operator]
    if not region:
        # Undefined variables expand to nothing; simple and reserved
        # expressions still need a value to identify a resource.
        return expr.operator not in ("", "+")
    if prefix:
        if not region.startswith(prefix):
            return False
        region = region[len(prefix) :]
    if not reserved and any(c in _RESERVED and c not in sep and c != "=" for c in region):
        return False
    variables = expr.variables
    if named:
        return _match_named(variables, region, sep, values)
    if len(variables) == 1:
        var = variables[0]
        if var.explode:
            values[var.name] = [unquote(item) for item in region.split(sep)]
            return True
        if not reserved and sep in region and sep != ",":
            return False
        if not reserved and "," in region:
            return False
        values[var.name] = unquote(region)
        return True
    items = region.split(sep if sep != "," else ",")
    if len(items) > len(variables):
        return False
    for var, item in zip(variables, items, strict=False):
        values[var.name] = unquote(item)
    return True


def _match_named(variables: tuple[_Var, ...], region: str, sep: str, values: Values) -> bool:
    wanted = {v.name: v for v in variables}
    for pair in region.split(sep):
        name, eq, raw = pair.partition("=")
        var = wanted.get(name)
        if var is None:
            continue  # extra query parameters are tolerated
        value = unquote(raw) if eq else ""
        if var.explode:
            existing = values.setdefault(name, [])
            if isinstance(existing, list):
                existing.append(value)
        else:
            values[name] = value
    return True
