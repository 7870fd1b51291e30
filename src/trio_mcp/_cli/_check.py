"""``trio-mcp check -- CMD ...`` and ``trio-mcp check --url URL``.

Runs every check of :mod:`trio_mcp._check` against the server and prints the
report (a table, ``--json`` or ``--markdown``); the exit status is 0 only
when no check failed (1 otherwise, 2 for bad arguments).

Cancellation: Ctrl+C cancels the run; every server process the checker
spawned is killed on the way out.

Spec: see :mod:`trio_mcp._check`.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any, TextIO

import httpx

from .._check import HttpTarget, Options, Report, StdioTarget, run_checks
from .._check._report import write_json, write_markdown, write_text

#: Exit status when a check failed.
FAILED = 1


async def run_check(
    command: Sequence[str],
    *,
    url: str | None,
    options: Options,
    only: Sequence[str] = (),
    skip: Sequence[str] = (),
    eras: Sequence[str] = ("legacy", "modern"),
    output: str = "text",
    out: TextIO | None = None,
) -> int:
    """Check the server and write the report to *out* (stdout); the exit status."""
    out = out or sys.stdout
    report: Report
    if url is not None:
        async with httpx.AsyncClient(timeout=httpx.Timeout(options.timeout * 3)) as client:
            report = await run_checks(
                HttpTarget(url, client), options, only=only, skip=skip, eras=eras
            )
    else:
        report = await run_checks(
            StdioTarget(tuple(command)), options, only=only, skip=skip, eras=eras
        )
    writers: dict[str, Any] = {"json": write_json, "markdown": write_markdown}
    writers.get(output, write_text)(report, out)
    out.flush()
    return FAILED if report.failed else 0
