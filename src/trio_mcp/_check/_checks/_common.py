"""Small helpers the check modules share (failure messages, error objects).

Spec: none by itself.
"""

from __future__ import annotations

from typing import Any

import orjson

from .._model import CheckFailed

#: How long after a cancel a frame may still be in flight (written before the
#: server read the cancel, or read late by a checker starved of CPU); later
#: ones count as sent after it. A handler that ignores the cancel goes on
#: reporting through the whole watch that follows.
IN_FLIGHT_GRACE = 0.5


def dump(message: object) -> str:
    """*message* as compact JSON, for a failure message."""
    text = orjson.dumps(message).decode()
    return text if len(text) <= 200 else f"{text[:200]}..."


def expect(condition: object, failure: str) -> None:
    """CheckFailed(*failure*) unless *condition*."""
    if not condition:
        raise CheckFailed(failure)


def error_of(message: dict[str, Any] | None) -> dict[str, Any]:
    error = (message or {}).get("error")
    return error if isinstance(error, dict) else {}
