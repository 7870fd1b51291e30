"""The request timeline: records (and frames) drawn as one self-contained HTML
file, one lane per request.

Inline SVG and CSS only: no script, no font, nothing fetched (the page's own
Content-Security-Policy forbids it), so the file can be mailed, attached to a
bug or opened from a CI artifact. What a lane shows:

* the QUEUED segment (grey), the RUNNING segment (blue) and a terminal cap in
  the colour of how it ended (COMPLETED green, FAILED red, CANCELLED orange);
* a tick for each progress notification, a cross where it was cancelled,
  labelled with who asked (caller, peer, deadline, shutdown, transport);
* the rounds of one 2026-07-28 input-required call on adjacent lanes, each
  round's end joined to the next round's start;
* a task lane under the request that created the task, lasting until a frame
  showed the task ended (it outlives the request, which ended at once);
* a dot for each frame about the request; hovering shows the frame (the SVG
  ``<title>`` tooltips of every browser), as hovering a lane shows its record.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Iterable, Sequence
from html import escape

from ..protocol import Direction, FrameDirection, RequestId, RequestRecord, RequestState
from ._frames import SeenFrame, TaskSpan, frames_by_request, task_spans
from ._rounds import Round, call_rounds
from ._table import request_table

_LABEL_WIDTH = 300
_PLOT_WIDTH = 820
_RIGHT = 230  # room for the note after a lane's end
_LANE = 30
_BAR = 12
_TOP = 64

_COLOURS = {
    "queued": "#b8c0cc",
    "running": "#3d7fd1",
    "completed": "#2c9a58",
    "failed": "#d43c3c",
    "cancelled": "#e2871b",
    "task": "#8a63c2",
    "input_required": "#c9a400",
    "frame": "#222a35",
}

_STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #1d2430; background: #fff; }
h1 { font-size: 20px; margin: 0 0 4px; }
h2 { font-size: 16px; margin: 20px 0 4px; }
p.sub { margin: 0 0 16px; color: #566070; }
pre { font: 12px/1.35 ui-monospace, monospace; background: #f5f7fa; padding: 12px;
      overflow-x: auto; border-radius: 4px; }
"""

# Inside the drawing, so that it reads the same alone (as an image in a page).
_SVG_STYLE = """
text { font: 12px system-ui, sans-serif; fill: #1d2430; }
text.dim { fill: #6b7480; }
text.mono { font: 11px ui-monospace, monospace; white-space: pre; }
.lane:hover .band { fill: #eef3fb; }
.frame:hover { r: 5; }
"""


def _fmt(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms" if seconds < 1 else f"{seconds:.3f} s"


def _step(span: float) -> float:
    """A round axis step giving about eight ticks over *span* seconds."""
    raw = span / 8
    power = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 5, 10):
        if raw <= factor * power:
            return float(factor * power)
    return float(10 * power)


class _Scale:
    def __init__(self, start: float, end: float) -> None:
        self.start = start
        self.span = max(end - start, 1e-3)

    def x(self, t: float) -> float:
        return round(_LABEL_WIDTH + (t - self.start) / self.span * _PLOT_WIDTH, 2)


def _frame_title(frame: SeenFrame, start: float) -> str:
    arrow = "sent" if frame.direction is FrameDirection.OUT else "received"
    text = frame.text
    if isinstance(frame.message, dict):
        text = json.dumps(frame.message, indent=1)
    if len(text) > 1500:
        text = text[:1500] + " ..."
    return f"{arrow} at {frame.at - start:.3f}s\n{text}"


def _record_title(record: RequestRecord, start: float, round_: Round | None) -> str:
    def rel(t: float | None) -> str:
        return "-" if t is None else f"{t - start:.3f}s"

    lines = [
        f"{record.method} (id {record.id}, {record.direction.value}): {record.state.value}",
        f"queued {rel(record.queued_at)}, running {rel(record.started_at)}, "
        f"ended {rel(record.finished_at)}",
    ]
    if record.duration is not None:
        lines.append(f"took {_fmt(record.duration)}")
    if round_ is not None:
        lines.append(round_.describe())
    if record.progress is not None:
        total = "" if record.progress.total is None else f"/{record.progress.total:g}"
        lines.append(f"last progress {record.progress.progress:g}{total}")
    if record.cancel_origin is not None:
        lines.append(f"cancel asked by {record.cancel_origin.value}: {record.cancel_reason}")
    if record.error is not None:
        lines.append(f"error {record.error.code}: {record.error.message}")
    lines.extend(f"late: {event}" for event in record.late_events)
    return "\n".join(lines)


def _note(record: RequestRecord, round_: Round | None) -> str:
    parts = [record.state.value]
    if record.duration is not None:
        parts.append(_fmt(record.duration))
    if record.cancel_origin is not None:
        parts.append(f"by {record.cancel_origin.value}")
    elif record.error is not None:
        parts.append(f"error {record.error.code}")
    if round_ is not None and round_.input_required:
        parts.append("input required")
    return ", ".join(parts)


def _order(
    records: Sequence[RequestRecord], rounds: dict[tuple[Direction, RequestId], Round]
) -> list[RequestRecord]:
    """Lanes in the order requests were made, the rounds of one call together."""
    first_at: dict[tuple[Direction, RequestId], float] = {}
    for record in records:
        round_ = rounds.get((record.direction, record.id))
        if round_ is not None and round_.number == 1:
            first_at[(record.direction, record.id)] = record.queued_at

    def key(record: RequestRecord) -> tuple[float, int, float]:
        round_ = rounds.get((record.direction, record.id))
        if round_ is None:
            return (record.queued_at, 0, record.queued_at)
        begun = first_at.get((record.direction, round_.first), record.queued_at)
        return (begun, round_.number, record.queued_at)

    return sorted(records, key=key)


def request_timeline(
    records: Sequence[RequestRecord],
    *,
    frames: Iterable[SeenFrame] = (),
    start: float | None = None,
    end: float | None = None,
    title: str = "Requests",
) -> str:
    """The timeline of *records* as one self-contained HTML page (a string).

    One lane per request (inline SVG, no script, nothing fetched): its QUEUED,
    RUNNING and terminal segments coloured by state, a tick per progress
    notification, a cross with the origin where it was cancelled, the rounds
    of one input-required call joined, tasks on lanes of their own that
    outlive the request that created them, and a dot per frame that shows
    the frame on hover. *frames* (from a :class:`FrameLog`) are optional:
    without them the lanes show the records alone (no ticks, dots or tasks).
    Times are seconds since *start* (default: the first record or frame);
    the axis runs to *end* (default: the last thing seen). The text
    :func:`request_table` follows the drawing.
    """
    return timeline_page(title, [timeline_section(records, frames=frames, start=start, end=end)])


def timeline_page(title: str, sections: Sequence[str]) -> str:
    """One HTML page holding *sections* (from :func:`timeline_section`) under *title*."""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">\n'
        '<meta http-equiv="Content-Security-Policy" '
        "content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
        f"<title>{escape(title)}</title>\n<style>{_STYLE}</style></head>\n"
        f"<body><h1>{escape(title)}</h1>\n{''.join(sections)}</body></html>\n"
    )


def timeline_section(
    records: Sequence[RequestRecord],
    *,
    frames: Iterable[SeenFrame] = (),
    start: float | None = None,
    end: float | None = None,
    heading: str | None = None,
) -> str:
    """The drawing and the table of one session's *records*, as an HTML
    fragment (see :func:`request_timeline`)."""
    frames = list(frames)
    stamps = [r.queued_at for r in records] + [f.at for f in frames]
    finishes = [t for r in records for t in (r.started_at, r.finished_at) if t is not None]
    if start is None:
        start = min(stamps, default=0.0)
    if end is None:
        end = max([*stamps, *finishes], default=start)
    scale = _Scale(start, end)
    rounds = call_rounds(records)
    by_request = frames_by_request(records, frames)
    tasks = task_spans(frames)
    tasks_of: dict[tuple[Direction, RequestId], list[TaskSpan]] = {}
    orphans: list[TaskSpan] = []
    for task in tasks:
        if task.created_by is not None and any(
            (r.direction, r.id) == task.created_by for r in records
        ):
            tasks_of.setdefault(task.created_by, []).append(task)
        else:
            orphans.append(task)

    body: list[str] = []
    lane = 0
    ends: dict[tuple[Direction, RequestId], tuple[float, float]] = {}
    starts: dict[tuple[Direction, RequestId], tuple[float, float]] = {}
    joins: list[str] = []

    def y_of(index: int) -> float:
        return _TOP + index * _LANE + _LANE / 2

    for record in _order(records, rounds):
        key = (record.direction, record.id)
        round_ = rounds.get(key)
        y = y_of(lane)
        body.append(_lane(record, round_, by_request.get(key, []), scale, y, start, end))
        finish = record.finished_at if record.finished_at is not None else end
        ends[key] = (scale.x(finish), y)
        starts[key] = (scale.x(record.queued_at), y)
        if round_ is not None and record.follows is not None:
            previous = ends.get((record.direction, record.follows))
            if previous is not None:
                (x0, y0), (x1, y1) = previous, starts[key]
                joins.append(
                    f'<path class="round-join" d="M{x0},{y0} C{x0 + 24},{y0} {x1 - 24},{y1} '
                    f'{x1},{y1}" fill="none" stroke="{_COLOURS["input_required"]}" '
                    f'stroke-width="2" stroke-dasharray="4 3"><title>'
                    f"{escape(round_.describe())}</title></path>"
                )
        lane += 1
        for task in tasks_of.get(key, []):
            body.append(_task_lane(task, scale, y_of(lane), start, end, ends[key]))
            lane += 1
    for task in orphans:
        body.append(_task_lane(task, scale, y_of(lane), start, end, None))
        lane += 1

    height = _TOP + max(lane, 1) * _LANE + 20
    width = _LABEL_WIDTH + _PLOT_WIDTH + _RIGHT
    axis = _axis(scale, start, end, height)
    empty = (
        f'<text x="{_LABEL_WIDTH}" y="{_TOP + 18}" class="dim">no requests</text>'
        if not records
        else ""
    )
    label = heading or "requests"
    svg = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(label)}: '
        f'{len(records)} requests"><style>{_SVG_STYLE}</style><rect width="100%" '
        f'height="100%" fill="#fff"/>'
        f"{_legend()}{axis}{''.join(body)}{''.join(joins)}{empty}</svg>"
    )
    table = request_table(records, start=start) if records else ""
    subtitle = (
        f"{_plural(len(records), 'request')}, {_plural(len(tasks), 'task')}, "
        f"{_plural(len(frames), 'frame')} over "
        f"{_fmt(end - start)}; hover a lane for its record, a dot for its frame"
    )
    head = f"<h2>{escape(heading)}</h2>" if heading else ""
    return (
        f'<section>{head}<p class="sub">{escape(subtitle)}</p>\n'
        f"{svg}\n<pre>{escape(table)}</pre></section>\n"
    )


def _legend() -> str:
    items = [
        ("queued", "queued"),
        ("running", "running"),
        ("completed", "completed"),
        ("failed", "failed"),
        ("cancelled", "cancelled"),
        ("input_required", "input-required round"),
        ("task", "task"),
    ]
    out = []
    x = 10
    for colour, label in items:
        out.append(
            f'<rect x="{x}" y="8" width="14" height="10" fill="{_COLOURS[colour]}"/>'
            f'<text x="{x + 18}" y="17">{label}</text>'
        )
        x += 26 + 7 * len(label)
    out.append(
        f'<path d="M{x} 9 l8 8 M{x + 8} 9 l-8 8" stroke="{_COLOURS["cancelled"]}" '
        f'stroke-width="2"/><text x="{x + 14}" y="17">cancel</text>'
    )
    x += 70
    out.append(
        f'<line x1="{x}" y1="7" x2="{x}" y2="19" stroke="{_COLOURS["frame"]}"/>'
        f'<text x="{x + 6}" y="17">progress</text>'
    )
    return "".join(out)


def _axis(scale: _Scale, start: float, end: float, height: float) -> str:
    step = _step(scale.span)
    out = [
        f'<line x1="{_LABEL_WIDTH}" y1="{_TOP - 12}" x2="{_LABEL_WIDTH + _PLOT_WIDTH}" '
        f'y2="{_TOP - 12}" stroke="#9aa3ad"/>'
    ]
    count = int(scale.span / step + 1e-9)
    for n in range(count + 1):
        t = n * step
        x = scale.x(start + t)
        label = f"{t * 1000:g} ms" if step < 1 else f"{t:g} s"
        out.append(
            f'<line x1="{x}" y1="{_TOP - 16}" x2="{x}" y2="{height - 16}" stroke="#e3e7ec"/>'
            f'<text x="{x}" y="{_TOP - 20}" text-anchor="middle" class="dim">{label}</text>'
        )
    return "".join(out)


def _lane(
    record: RequestRecord,
    round_: Round | None,
    frames: list[SeenFrame],
    scale: _Scale,
    y: float,
    start: float,
    end: float,
) -> str:
    top = y - _BAR / 2
    arrow = "→" if record.direction is Direction.OUTBOUND else "←"
    indent = "    + " if round_ is not None and round_.number > 1 else ""
    label = f"{indent}{arrow} {record.id} {record.method}{_target(frames)}"
    parts = [
        f'<g class="lane" data-state="{record.state.value}" data-method="{escape(record.method)}">'
        f"<title>{escape(_record_title(record, start, round_))}</title>"
        f'<rect class="band" x="0" y="{y - _LANE / 2}" '
        f'width="{_LABEL_WIDTH + _PLOT_WIDTH + _RIGHT}" height="{_LANE}" fill="transparent"/>'
        f'<text x="8" y="{y + 4}" class="mono">{escape(label[:44])}</text>'
    ]
    running_from = record.started_at
    queued_to = running_from if running_from is not None else record.finished_at
    queued_to = end if queued_to is None else queued_to
    x0, x1 = scale.x(record.queued_at), scale.x(queued_to)
    parts.append(
        f'<rect class="seg queued" x="{x0}" y="{top}" width="{max(x1 - x0, 1)}" '
        f'height="{_BAR}" fill="{_COLOURS["queued"]}"/>'
    )
    if running_from is not None:
        finish = record.finished_at if record.finished_at is not None else end
        x2 = scale.x(finish)
        parts.append(
            f'<rect class="seg running" x="{x1}" y="{top}" width="{max(x2 - x1, 1)}" '
            f'height="{_BAR}" fill="{_COLOURS["running"]}"/>'
        )
    if record.state.is_terminal and record.finished_at is not None:
        xe = scale.x(record.finished_at)
        colour = _COLOURS[record.state.value]
        if record.state is RequestState.COMPLETED and record.input_required:
            colour = _COLOURS["input_required"]
        parts.append(
            f'<rect class="seg terminal {record.state.value}" x="{xe - 2}" y="{top - 3}" '
            f'width="5" height="{_BAR + 6}" fill="{colour}"/>'
        )
    else:
        xe = scale.x(end)
    for frame in frames:
        message = frame.message if isinstance(frame.message, dict) else {}
        xf = scale.x(frame.at)
        if message.get("method") == "notifications/progress":
            parts.append(
                f'<line class="progress" x1="{xf}" y1="{top - 5}" x2="{xf}" y2="{top + _BAR + 1}"'
                f' stroke="{_COLOURS["frame"]}" stroke-width="1.5"/>'
            )
    if record.cancel_origin is not None:
        cancel_at = next(
            (
                f.at
                for f in frames
                if isinstance(f.message, dict)
                and f.message.get("method") == "notifications/cancelled"
            ),
            record.finished_at,
        )
        if cancel_at is not None:
            xc = scale.x(cancel_at)
            parts.append(
                f'<path class="cancel" d="M{xc - 5},{y - 5} l10,10 M{xc + 5},{y - 5} l-10,10" '
                f'stroke="{_COLOURS["cancelled"]}" stroke-width="2.5"><title>cancel asked by '
                f"{record.cancel_origin.value}: {escape(record.cancel_reason or '')}</title></path>"
            )
    for frame in frames:
        xf = scale.x(frame.at)
        parts.append(
            f'<circle class="frame" cx="{xf}" cy="{y + _BAR / 2 + 4}" r="3" '
            f'fill="{_COLOURS["frame"]}"><title>{escape(_frame_title(frame, start))}'
            "</title></circle>"
        )
    parts.append(
        f'<text x="{xe + 10}" y="{y + 4}" class="dim">{escape(_note(record, round_))}</text></g>'
    )
    return "".join(parts)


def _target(frames: list[SeenFrame]) -> str:
    """`` name`` of the tool or prompt (or the resource's URI) the request named."""
    for frame in frames:
        message = frame.message
        if isinstance(message, dict) and "method" in message:
            params = message.get("params")
            if isinstance(params, dict):
                target = params.get("name", params.get("uri"))
                if isinstance(target, str):
                    return f" {target}"
            return ""
    return ""


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _task_lane(
    task: TaskSpan,
    scale: _Scale,
    y: float,
    start: float,
    end: float,
    creator: tuple[float, float] | None,
) -> str:
    top = y - _BAR / 2
    finish = task.ended_at if task.ended_at is not None else end
    history = ", ".join(f"{status} at {at - start:.3f}s" for at, status in task.statuses)
    parts = [
        f'<g class="lane task" data-state="{escape(task.status)}">'
        f"<title>task {escape(task.task_id)}: {escape(history)}</title>"
        f'<text x="8" y="{y + 4}" class="mono">{escape(f"    ⤷ task {task.task_id}"[:44])}</text>'
    ]
    # One segment per status: working, input_required, ... up to the end.
    moments = [*task.statuses, (finish, task.status)]
    for (at, status), (until, _) in itertools.pairwise(moments):
        colour = _COLOURS["input_required"] if status == "input_required" else _COLOURS["task"]
        x0, x1 = scale.x(at), scale.x(until)
        parts.append(
            f'<rect class="seg task-{escape(status)}" x="{x0}" y="{top}" '
            f'width="{max(x1 - x0, 1)}" height="{_BAR}" fill="{colour}" opacity="0.85"/>'
        )
    if task.ended_at is not None and task.status in _COLOURS:
        xe = scale.x(task.ended_at)
        parts.append(
            f'<rect class="seg terminal" x="{xe - 2}" y="{top - 3}" width="5" '
            f'height="{_BAR + 6}" fill="{_COLOURS[task.status]}"/>'
        )
    if creator is not None:
        cx, cy = creator
        parts.append(
            f'<path d="M{cx},{cy + _BAR / 2} V{y} H{scale.x(task.created_at)}" fill="none" '
            f'stroke="{_COLOURS["task"]}" stroke-dasharray="3 2"/>'
        )
    note = task.status if task.ended_at is not None else f"{task.status}, still running"
    parts.append(
        f'<text x="{scale.x(finish) + 10}" y="{y + 4}" class="dim">{escape(note)}</text></g>'
    )
    return "".join(parts)
