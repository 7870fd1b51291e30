"""The request table: one line per request, for a terminal."""

from __future__ import annotations

from collections.abc import Sequence

from ..protocol import RequestRecord
from ._rounds import call_rounds


def request_table(records: Sequence[RequestRecord], *, start: float | None = None) -> str:
    """The request table of *records*, as text, in the order they were made.

    One line per request: id, method, direction, final state, when each state
    began (seconds since *start*; default: the first record's queued time)
    and the duration in milliseconds; the note says why a request ended as it
    did (who cancelled it and why, or its error) and which round of a multi
    round-trip call (2026-07-28) it is, later rounds indented under the first.
    It is what ``trio-mcp demo`` and ``trio-mcp trace`` print. Lines end in a
    newline; no colour.
    """
    ordered = sorted(records, key=lambda r: r.queued_at)
    if start is None:
        start = ordered[0].queued_at if ordered else 0.0
    lines = [
        f"{'id':>4} {'method':<26} {'dir':<8} {'state':<10} "
        f"{'queued':>8} {'running':>8} {'ended':>8} {'ms':>8}  note"
    ]

    def rel(t: float | None) -> str:
        return "-" if t is None else f"{t - start:.3f}"

    rounds = call_rounds(records)
    for r in ordered:
        ms = f"{r.duration * 1000:.1f}" if r.duration is not None else "-"
        notes: list[str] = []
        round_ = rounds.get((r.direction, r.id))
        if round_ is not None:
            notes.append(round_.describe())
        if r.cancel_origin:
            notes.append(f"{r.cancel_origin.value}: {r.cancel_reason}")
        elif r.error is not None:
            notes.append(f"error {r.error.code}: {r.error.message}")
        # A later round is indented under the first: one call, several requests.
        method = r.method if round_ is None or round_.number == 1 else f"  + {r.method}"
        lines.append(
            f"{r.id!s:>4} {method:<26} {r.direction.value:<8} {r.state.value:<10} "
            f"{rel(r.queued_at):>8} {rel(r.started_at):>8} {rel(r.finished_at):>8} {ms:>8}  "
            f"{'; '.join(notes)}".rstrip()
        )
    return "".join(f"{line}\n" for line in lines)
