"""The client's side of ``x-mcp-header`` over Streamable HTTP in 2026-07-28.

Theory of operation
-------------------
A tool may mark arguments with ``x-mcp-header``; an HTTP client mirrors each
marked argument into ``Mcp-Param-{Name}`` (HM-25). The transport that mirrors
them holds a :class:`~trio_mcp.protocol._headers.ToolHeaderRules` (given at its
construction, see ``trio_mcp._transport``), and the client teaches it the
tools it lists:

* :func:`usable_tools` drops from a ``tools/list`` result every tool whose
  annotations break the rules (HM-26), logging a warning with the tool's name
  and the reason (HM-27): such a tool cannot be called correctly over HTTP, so
  it is not offered. The rules learn the annotations of the others.
* :func:`is_param_header_mismatch` says whether a -32020 refusal may come from
  the ``Mcp-Param-*`` headers (not from a standard header, which the client
  always derives from the body), the one case where refreshing ``tools/list``
  and retrying once can help (HM-29).

Over a transport that mirrors no headers (stdio) the annotations are ignored
(HM-27 MAY).

Spec: HM-25, HM-26, HM-27, HM-29.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from .. import types as mcp_types
from .._errors import RPCError
from ..protocol import ErrorCode
from ..protocol._headers import InvalidHeaderAnnotation, ToolHeaderRules

logger = logging.getLogger("trio_mcp.client")

#: Standard headers a -32020 may name; a mismatch there is not the tool's.
_STANDARD = ("mcp-protocol-version", "mcp-method", "mcp-name")


def usable_tools(rules: ToolHeaderRules, tools: Iterable[mcp_types.Tool]) -> list[mcp_types.Tool]:
    """*tools* without those whose ``x-mcp-header`` annotations are invalid
    (each logged); *rules* learn the annotations of the kept ones.

    Cancellation: no I/O; nothing waits.
    """
    kept: list[mcp_types.Tool] = []
    for tool in tools:
        try:
            rules.learn(tool.name, tool.input_schema)
        except InvalidHeaderAnnotation as exc:
            logger.warning("dropped tool %r: invalid x-mcp-header: %s", tool.name, exc)
            continue
        kept.append(tool)
    return kept


def is_param_header_mismatch(error: RPCError) -> bool:
    """Whether *error* is a -32020 that may come from ``Mcp-Param-*`` headers
    (HM-29): a HeaderMismatch that does not name a standard header."""
    if error.code != ErrorCode.HEADER_MISMATCH:
        return False
    text = error.message.lower()
    if "mcp-param" in text:
        return True
    return not any(name in text for name in _STANDARD)
