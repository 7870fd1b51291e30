"""What a check reports: outcomes, results, recorded frames, and the two
exceptions a check raises: :class:`CheckFailed` (with what it saw) and
:class:`CheckSkipped` (with the reason). The check itself is in :mod:`._definition`.

Spec: none by itself (the rows are named by each check).
"""

from __future__ import annotations

import enum

import attrs

from .._errors import MCPError

#: The eras a check can apply to.
LEGACY = "legacy"
MODERN = "modern"
BOTH_ERAS = frozenset({LEGACY, MODERN})
#: The transports a check can apply to.
STDIO = "stdio"
HTTP = "http"
BOTH_TRANSPORTS = frozenset({STDIO, HTTP})


class Outcome(enum.Enum):
    """How a check ended."""

    PASS = "PASS"
    FAIL = "FAIL"
    SKIP = "SKIP"


class CheckFailed(MCPError):
    """Raised by a check: the server broke the rule (the message says how)."""


class CheckSkipped(MCPError):
    """Raised by a check: it could not run (the message says why)."""


@attrs.frozen
class FrameRecord:
    """One frame of a check's exchange: ``"->"`` sent, ``"<-"`` received, ``"--"`` a note."""

    at: float
    direction: str
    text: str

    def to_json(self) -> dict[str, object]:
        return {"at": round(self.at, 4), "direction": self.direction, "text": self.text}


@attrs.frozen
class CheckResult:
    """What one check found, on one transport, in one era."""

    check_id: str
    title: str
    rows: tuple[str, ...]
    transport: str
    era: str
    outcome: Outcome
    detail: str
    seconds: float
    frames: tuple[FrameRecord, ...] = ()

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.check_id,
            "title": self.title,
            "rows": list(self.rows),
            "transport": self.transport,
            "era": self.era,
            "outcome": self.outcome.value,
            "detail": self.detail,
            "seconds": round(self.seconds, 3),
            "frames": [frame.to_json() for frame in self.frames],
        }
