"""Wire helpers for the sans-I/O protocol tests (``ProtocolPair`` ships in trio_mcp.testing).

Not a conftest: ``tests/conftest.py`` already owns that module name for mypy.
"""

from __future__ import annotations

from typing import Any

import orjson

from trio_mcp.protocol import Notification


def wire(data: bytes | None) -> Any:
    """The JSON object in *data* (asserting something was written)."""
    assert data is not None, "expected bytes on the wire, got nothing"
    return orjson.loads(data)


def frame(obj: Any) -> bytes:
    """Raw bytes of an arbitrary JSON value, as a peer might write them."""
    return orjson.dumps(obj)


def notification(method: str, params: dict[str, Any] | None = None) -> Notification:
    return Notification(method, params)
