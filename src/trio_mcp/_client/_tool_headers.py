"""The client's side of ``x-mcp-header`` over Streamable HTTP in 2026-07-28.

Theory of operation
-------------------
A tool may mark arguments with ``x-mcp-header``; an HTTP client mirrors each
marked argument into ``Mcp-Param-{Name}`` (HM-25). :class:`ToolHeaderRules`
holds what the client knows about the annotations of the tools it listed:

* :meth:`ToolHeaderRules.usable` drops from a ``tools/list`` result every tool
  whose annotations break the rules (HM-26), logging a warning with the tool's
  name and the reason (HM-27): such a tool cannot be called correctly over
  HTTP, so it is not offered. It remembers the annotations of the others.
* :meth:`ToolHeaderRules.annotations` gives the transport the annotations of a
  tool by name (none for a tool never listed).
* :func:`is_param_header_mismatch` says whether a -32020 refusal may come from
  the ``Mcp-Param-*`` headers (not from a standard header, which the client
  always derives from the body), the one case where refreshing ``tools/list``
  and retrying once can help (HM-29).

Only a transport that mirrors headers uses this (``tool_headers`` in
``trio_mcp._transport``); over stdio the annotations are ignored (HM-27 MAY).

Spec: HM-25, HM-26, HM-27, HM-29.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from .. import types as mcp_types
from .._errors import RPCError
from ..protocol import ErrorCode
from ..protocol._headers import HeaderAnnotation, InvalidHeaderAnnotation, header_annotations

logger = logging.getLogger("trio_mcp.client")

#: Standard headers a -32020 may name; a mismatch there is not the tool's.
_STANDARD = ("mcp-protocol-version", "mcp-method", "mcp-name")


class ToolHeaderRules:
    """The ``x-mcp-header`` annotations of the listed tools (see the module).

    Cancellation: no I/O; nothing waits.
    """

    def __init__(self) -> None:
        self._annotations: dict[str, tuple[HeaderAnnotation, ...]] = {}

    def usable(self, tools: Iterable[mcp_types.Tool]) -> list[mcp_types.Tool]:
        """*tools* without those whose annotations are invalid (each logged).

        The annotations of the kept tools replace those known by the same name.
        """
        kept: list[mcp_types.Tool] = []
        for tool in tools:
            try:
                found = header_annotations(tool.input_schema)
            except InvalidHeaderAnnotation as exc:
                logger.warning("dropped tool %r: invalid x-mcp-header: %s", tool.name, exc)
                self._annotations.pop(tool.name, None)
                continue
            self._annotations[tool.name] = found
            kept.append(tool)
        return kept

    def annotations(self, name: str) -> tuple[HeaderAnnotation, ...]:
        """The annotations of tool *name* as last listed (none if never listed)."""
        return self._annotations.get(name, ())


def is_param_header_mismatch(error: RPCError) -> bool:
    """Whether *error* is a -32020 that may come from ``Mcp-Param-*`` headers
    (HM-29): a HeaderMismatch that does not name a standard header."""
    if error.code != ErrorCode.HEADER_MISMATCH:
        return False
    text = error.message.lower()
    if "mcp-param" in text:
        return True
    return not any(name in text for name in _STANDARD)
