"""The request table and the request timeline (``trio_mcp.lowlevel``), and the
``--html`` option of ``trio-mcp trace`` and ``trio-mcp demo``.

The records come from real sessions (``recorded_session.py``: our client and
server over the in-memory pair, in each era, on the autojump clock); the CLI
tests spawn the bundled Paper Trail server over stdio.
"""

from __future__ import annotations

import io
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import trio
from recorded_session import Recorded, record

from trio_mcp._cli._demo import run_demo
from trio_mcp._cli._trace import run_trace
from trio_mcp.lowlevel import (
    CancelOrigin,
    FrameDirection,
    FrameLog,
    RequestRecord,
    RequestState,
    request_table,
    request_timeline,
)

ROOT = Path(__file__).resolve().parent.parent
SERVER = [sys.executable, str(ROOT / "examples" / "paper_trail.py")]
SVG = "{http://www.w3.org/2000/svg}"


def svg_of(page: str, index: int = 0) -> ET.Element:
    """The *index*-th drawing of a page, parsed as XML (so it is well formed)."""
    drawings = re.findall(r"<svg .*?</svg>", page, flags=re.S)
    return ET.fromstring(drawings[index])


def lanes(svg: ET.Element) -> list[ET.Element]:
    return [g for g in svg.iter(f"{SVG}g") if "lane" in g.get("class", "").split()]


def by_class(svg: ET.Element, name: str) -> list[ET.Element]:
    return [e for e in svg.iter() if name in e.get("class", "").split()]


def title(element: ET.Element) -> str:
    found = element.find(f"{SVG}title")
    assert found is not None
    assert found.text
    return found.text


@pytest.fixture(params=["legacy", "modern"])
async def recorded(request: pytest.FixtureRequest, autojump_clock: trio.abc.Clock) -> Recorded:
    return await record(request.param)


async def test_the_table_has_a_line_per_request_in_the_order_they_were_made(
    recorded: Recorded,
) -> None:
    table = request_table(recorded.records).splitlines()
    assert table[0].split() == [
        *("id", "method", "dir", "state", "queued", "running", "ended", "ms", "note")
    ]
    assert len(table) == len(recorded.records) + 1
    assert table[1].split()[:4] == [
        "1",
        "initialize" if recorded.era == "legacy" else "server/discover",
        "outbound",
        "completed",
    ]
    assert table[1].split()[4] == "0.000"  # times are since the first request
    cancelled = [line for line in table if " cancelled " in line]
    assert cancelled[0].endswith("caller: the user pressed stop")
    assert "deadline: tools/call timed out after 0.5s without progress" in cancelled[-1]
    [failed] = [line for line in table if " failed " in line]
    assert failed.endswith("error -32602: Unknown tool: nope")
    if recorded.era == "modern":
        [second] = [line for line in table if "+ tools/call" in line]
        assert second.endswith(": the answer")


async def test_the_timeline_is_one_page_that_fetches_nothing(recorded: Recorded) -> None:
    page = request_timeline(recorded.records, frames=recorded.frames, title="a <shop>")
    assert page.startswith("<!DOCTYPE html>")
    assert "<title>a &lt;shop&gt;</title>" in page
    assert "<script" not in page
    assert "default-src 'none'; style-src 'unsafe-inline'" in page
    # The only URL is the SVG namespace, which is a name, not a fetch.
    assert re.findall(r"https?://[^\s\"'<>]+", page) == ["http://www.w3.org/2000/svg"]
    assert not re.search(r"\b(src|href)=", page)
    assert request_table(recorded.records).splitlines()[1].strip() in page  # the table follows


async def test_each_request_has_a_lane_coloured_by_its_states(recorded: Recorded) -> None:
    svg = svg_of(request_timeline(recorded.records, frames=recorded.frames))
    request_lanes = [g for g in lanes(svg) if "task" not in g.get("class", "")]
    assert len(request_lanes) == len(recorded.records)
    assert sorted(g.get("data-state", "") for g in request_lanes) == sorted(
        r.state.value for r in recorded.records
    )
    for lane, record_ in zip(request_lanes, _lane_order(recorded), strict=True):
        assert title(lane).startswith(f"{record_.method} (id {record_.id}, ")
        segments = {c for e in by_class(lane, "seg") for c in e.get("class", "").split()}
        assert "queued" in segments
        if record_.started_at is not None:
            assert "running" in segments
        if record_.state.is_terminal:
            assert {"terminal", record_.state.value} <= segments
        else:  # the listen stream of 2026-07-28 still runs: no end cap
            assert "terminal" not in segments
    colours = {e.get("fill") for e in by_class(svg, "terminal") if "failed" in e.get("class", "")}
    assert colours == {"#d43c3c"}


def _lane_order(recorded: Recorded) -> list[RequestRecord]:
    # The rounds of a call are made one after another here, so the order made is the order drawn.
    return sorted(recorded.records, key=lambda r: r.queued_at)


async def test_progress_ticks_cancel_marks_and_frames_on_hover(recorded: Recorded) -> None:
    svg = svg_of(request_timeline(recorded.records, frames=recorded.frames))
    [report] = [g for g in lanes(svg) if title(g).startswith("tools/call") and "4/4" in title(g)]
    assert len(by_class(report, "progress")) == 4  # one per notification
    marks = by_class(svg, "cancel")
    origins = {r.cancel_origin for r in recorded.records if r.state is RequestState.CANCELLED}
    assert {CancelOrigin.CALLER, CancelOrigin.DEADLINE} <= origins
    assert [title(m) for m in marks if "caller" in title(m)] == [
        "cancel asked by caller: the user pressed stop"
    ]
    assert any(title(m).startswith("cancel asked by deadline: tools/call timed out") for m in marks)
    dots = by_class(svg, "frame")
    assert dots
    assert all(
        title(d).startswith(("sent at ", "received at ")) and '"jsonrpc": "2.0"' in title(d)
        for d in dots
    )
    # Every frame about a request shows on its lane; frames that are not
    # (notifications such as initialized, list changes) are left out.
    assert len(dots) <= len(recorded.frames)
    sent = sum(1 for f in recorded.frames if f.direction is FrameDirection.OUT)
    assert 0 < sum(1 for d in dots if title(d).startswith("sent at ")) <= sent


async def test_the_rounds_of_one_call_are_joined(autojump_clock: trio.abc.Clock) -> None:
    recorded = await record("modern")
    svg = svg_of(request_timeline(recorded.records, frames=recorded.frames))
    [join] = by_class(svg, "round-join")
    first = next(r for r in recorded.records if r.input_required)
    assert title(join) == f"round 2 of call {first.id}: the answer"
    labels = [title(g).split("\n")[0] for g in lanes(svg)]
    at = labels.index(f"tools/call (id {first.id}, outbound): completed")
    assert labels[at + 1].startswith("tools/call (id ")  # the next round, on the next lane
    [terminal] = [
        e
        for e in by_class(lanes(svg)[at], "terminal")
        if e.get("fill") == "#c9a400"  # ended asking for input
    ]
    assert terminal is not None


async def test_a_task_has_a_lane_that_outlives_its_request(autojump_clock: trio.abc.Clock) -> None:
    recorded = await record("legacy")
    svg = svg_of(request_timeline(recorded.records, frames=recorded.frames))
    [task] = [g for g in lanes(svg) if "task" in g.get("class", "").split()]
    assert task.get("data-state") == "completed"
    assert re.fullmatch(r"task \S+: working at \d\.\d{3}s, completed at \d\.\d{3}s", title(task))
    all_lanes = lanes(svg)
    creator = all_lanes[all_lanes.index(task) - 1]
    assert title(creator).startswith("tools/call")
    # The request ended at once, the task a second later (six frames of 0.1 s).
    end_of = {g: max(float(e.get("x", 0)) for e in by_class(g, "seg")) for g in (creator, task)}
    assert end_of[task] - end_of[creator] > 100


async def test_without_frames_the_lanes_show_the_records_alone(recorded: Recorded) -> None:
    svg = svg_of(request_timeline(recorded.records))
    assert len(lanes(svg)) == len(recorded.records)
    assert by_class(svg, "frame") == by_class(svg, "progress") == []
    assert len(by_class(svg, "cancel")) == 2  # at the records' end times


def test_no_records_is_an_empty_drawing() -> None:
    page = request_timeline([])
    assert lanes(svg_of(page)) == []
    assert "no requests" in page


def test_a_frame_log_keeps_the_last_frames() -> None:
    log = FrameLog(limit=2)
    for n in range(3):
        log.on_frame(FrameDirection.IN, b'{"jsonrpc":"2.0","id":%d,"result":{}}' % n, float(n))
    log.on_frame(FrameDirection.OUT, b"\xff not json", 3.0)
    assert [(f.at, f.message) for f in log.frames] == [
        (2.0, {"jsonrpc": "2.0", "id": 2, "result": {}}),
        (3.0, None),
    ]
    assert log.frames[1].text == "\ufffd not json"


async def test_trace_html_writes_the_timeline_of_the_session(tmp_path: Path) -> None:
    out = io.StringIO()
    target = tmp_path / "trace.html"
    with trio.fail_after(30):
        status = await run_trace(SERVER, out=out, inherit_env=True, html=target)
    assert status == 0, out.getvalue()
    page = target.read_text()
    assert f"<title>trace of {' '.join(SERVER)}</title>" in page
    methods = [title(g).split(" ")[0] for g in lanes(svg_of(page))]
    assert methods == ["server/discover", "tools/list", "server/discover"]


async def test_trace_html_says_when_the_file_cannot_be_written(tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    with trio.fail_after(30):
        status = await run_trace(
            SERVER, out=out, err=err, inherit_env=True, html=tmp_path / "no" / "t.html"
        )
    assert status == 1
    assert err.getvalue() == (
        f"trio-mcp: error: could not write the timeline to {tmp_path / 'no' / 't.html'}: "
        "No such file or directory\n"
    )


async def test_demo_html_writes_both_parts(tmp_path: Path) -> None:
    out = io.StringIO()
    target = tmp_path / "demo.html"
    with trio.fail_after(60):
        await run_demo(out, html=target)
    assert out.getvalue().endswith(f"######## The request timeline: {target}\n")
    page = target.read_text()
    assert page.count("<svg ") == 2
    assert "<h2>client requests (the handshake era)</h2>" in page
    assert "<h2>client requests (2026-07-28)</h2>" in page
    legacy, modern = svg_of(page, 0), svg_of(page, 1)
    assert [title(m).split(":")[0] for m in by_class(legacy, "cancel")] == [
        "cancel asked by caller",
        "cancel asked by deadline",
    ]
    assert len(by_class(legacy, "progress")) == 3  # prepare_report's steps
    assert len(by_class(modern, "round-join")) == 1  # return_order's two rounds
