"""Which round of which multi round-trip call (2026-07-28) each request is."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from ..protocol import Direction, RequestId, RequestRecord


@attrs.frozen
class Round:
    """One round of a multi round-trip call (2026-07-28)."""

    #: 1 for the first request of the call, 2 for its first retry, ...
    number: int
    #: The id of the call's first request: what names the call.
    first: RequestId
    #: This round ended with an ``InputRequiredResult`` (the client retries).
    input_required: bool

    def describe(self) -> str:
        """``round 2 of call 5: input required`` (or ``...: the answer``)."""
        ending = "input required" if self.input_required else "the answer"
        return f"round {self.number} of call {self.first}: {ending}"


def call_rounds(records: Sequence[RequestRecord]) -> dict[tuple[Direction, RequestId], Round]:
    """Which round of which call each multi round-trip request is (2026-07-28).

    A request that ``follows`` another is the next round of the same logical
    call; the first round is the one that follows nothing. Only the rounds of
    calls that had more than one (or that asked for input) are in the map,
    keyed by ``(direction, id)`` (ids of the two directions may coincide).

    Spec: PT-12, PT-13.
    """
    rounds: dict[tuple[Direction, RequestId], Round] = {}
    for record in sorted(records, key=lambda r: r.queued_at):
        key = (record.direction, record.id)
        if record.follows is None:
            if record.input_required:
                rounds[key] = Round(1, record.id, record.input_required)
            continue
        previous = rounds.get((record.direction, record.follows))
        number, first = (previous.number + 1, previous.first) if previous else (2, record.follows)
        rounds[key] = Round(number, first, record.input_required)
    return rounds
