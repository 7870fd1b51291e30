"""The documentation's state diagrams are drawn from the code's own tables.

``docs/_ext/trio_mcp_diagrams.py`` turns ``LIFECYCLE``, ``TRANSITIONS`` and
``TASK_TRANSITIONS`` into Graphviz source and renders it with ``dot`` at build
time. These tests change a row of each table, in place, exactly where the
build reads it, and show that the SVG changes with it.
"""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from trio_mcp.protocol import _lifecycle, _requests, _tasks
from trio_mcp.protocol._lifecycle import LifecycleEvent, Role, SessionState
from trio_mcp.protocol._requests import RequestEvent, RequestState
from trio_mcp.protocol._tasks import TaskEvent, TaskState

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "docs" / "_ext"))
#: The documentation's own extension (docs/_ext/ is not a package mypy reads).
diagrams: Any = importlib.import_module("trio_mcp_diagrams")


def _edge_list(svg: str) -> list[str]:
    """The edge titles in the SVG (``QUEUED->RUNNING``), as dot writes them."""
    titles = re.findall(r'<g id="edge\d+" class="edge">\s*<title>(.*?)</title>', svg)
    return [title.replace("&#45;&gt;", "->") for title in titles]


def _edges(svg: str) -> set[str]:
    return set(_edge_list(svg))


def test_every_diagram_renders_every_row() -> None:
    svg = diagrams.render_svg(diagrams.dot_source("requests"))
    assert _edges(svg) == {
        f"{state.name}->{target.name}"
        for state, moves in _requests.TRANSITIONS.items()
        for target in moves.values()
    }
    lifecycle = diagrams.render_svg(diagrams.dot_source("lifecycle"))
    assert "client:INITIALIZING->client:OPERATING" in _edges(lifecycle)
    tasks = diagrams.render_svg(diagrams.dot_source("tasks"))
    assert "INPUT_REQUIRED->WORKING" in _edges(tasks)


def test_changing_a_request_row_changes_the_svg(monkeypatch: pytest.MonkeyPatch) -> None:
    before = diagrams.render_svg(diagrams.dot_source("requests"))
    # A (made-up) row: a completed request that could still fail.
    monkeypatch.setitem(
        _requests.TRANSITIONS, RequestState.COMPLETED, {RequestEvent.FAIL: RequestState.FAILED}
    )
    after = diagrams.render_svg(diagrams.dot_source("requests"))
    assert after != before
    assert _edges(after) - _edges(before) == {"COMPLETED->FAILED"}


def test_changing_a_lifecycle_row_changes_the_svg(monkeypatch: pytest.MonkeyPatch) -> None:
    before = diagrams.render_svg(diagrams.dot_source("lifecycle"))
    server = dict(_lifecycle.LIFECYCLE[Role.SERVER])
    # Remove the server's "start stateless" move.
    server[SessionState.NEW] = {
        event: state
        for event, state in server[SessionState.NEW].items()
        if event is not LifecycleEvent.START_STATELESS
    }
    monkeypatch.setitem(_lifecycle.LIFECYCLE, Role.SERVER, server)
    after = diagrams.render_svg(diagrams.dot_source("lifecycle"))
    assert _edges(before) - _edges(after) == {"server:NEW->server:OPERATING"}
    assert "start stateless" in before
    assert "start stateless" not in after


def test_changing_a_task_row_changes_the_svg(monkeypatch: pytest.MonkeyPatch) -> None:
    before = diagrams.render_svg(diagrams.dot_source("tasks"))
    working = dict(_tasks.TASK_TRANSITIONS[TaskState.WORKING])
    working[TaskEvent.EXPIRE] = TaskState.CANCELLED  # expiry as a cancel, not a failure
    monkeypatch.setitem(_tasks.TASK_TRANSITIONS, TaskState.WORKING, working)
    after = diagrams.render_svg(diagrams.dot_source("tasks"))
    assert after != before
    # Two WORKING -> CANCELLED edges now (cancel, expire), one WORKING -> FAILED (fail).
    assert _edge_list(before).count("WORKING->CANCELLED") == 1
    assert _edge_list(after).count("WORKING->CANCELLED") == 2
    assert _edge_list(after).count("WORKING->FAILED") == 1
