"""``trio-mcp check -- CMD ...`` and ``trio-mcp check --url URL``.

Runs every check of :mod:`trio_mcp._check` against the server and prints the
report: on the terminal a table whose lines appear as each check finishes;
``--json`` or ``--markdown`` the whole document at the end. The exit status
is 0 only when no check failed (1 otherwise, 2 for bad arguments).

Cancellation: Ctrl+C stops the run, kills every server process the checker
spawned, prints the report of the checks that finished and exits with 130.

Spec: see :mod:`trio_mcp._check`.
"""

from __future__ import annotations

import contextlib
import signal
import sys
from collections.abc import Sequence
from typing import Any, TextIO

import httpx
import trio

from .._check import CheckResult, HttpTarget, Options, Report, StdioTarget, run_checks
from .._check._checks import ALL_CHECKS
from .._check._model import LEGACY, MODERN
from .._check._report import StreamedText, write_json, write_markdown
from .._check._target import Target
from ._errors import INTERRUPTED, print_error

#: Exit status when a check failed.
FAILED = 1

_ORDER = {check.id: n for n, check in enumerate(ALL_CHECKS)}
_ERA_ORDER = {"-": 0, LEGACY: 1, MODERN: 2}


def _in_report_order(results: list[CheckResult]) -> tuple[CheckResult, ...]:
    """The results as a whole report lists them: by era, then in check order."""
    return tuple(
        sorted(results, key=lambda r: (_ERA_ORDER.get(r.era, 3), _ORDER.get(r.check_id, -1)))
    )


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
    err: TextIO | None = None,
    handle_signals: bool = True,
) -> int:
    """Check the server and write the report to *out* (stdout); the exit status.

    Cancellation: with *handle_signals*, SIGINT (Ctrl+C) ends the run; the
    report then holds the checks that finished, and the status is 130.
    """
    out = out or sys.stdout
    err = err or sys.stderr
    finished: list[CheckResult] = []
    spoken: tuple[str, ...] = ()
    interrupted = False
    report: Report | None = None
    started = trio.current_time()
    async with contextlib.AsyncExitStack() as stack:
        target: Target
        if url is not None:
            client = await stack.enter_async_context(
                httpx.AsyncClient(timeout=httpx.Timeout(options.timeout * 3))
            )
            target = HttpTarget(url, client)
        else:
            target = StdioTarget(tuple(command))
        text = StreamedText(out, target.describe(), target.transport) if output == "text" else None

        def on_result(result: CheckResult) -> None:
            finished.append(result)
            if text is not None:
                text.result(result)

        def on_eras(found: tuple[str, ...]) -> None:
            nonlocal spoken
            spoken = found
            if text is not None:
                text.eras(found)

        async with trio.open_nursery() as nursery:
            run_scope = trio.CancelScope()
            if handle_signals:

                async def on_sigint(task_status: trio.TaskStatus[None]) -> None:
                    nonlocal interrupted
                    with trio.open_signal_receiver(signal.SIGINT) as signals:
                        task_status.started()
                        async for _ in signals:
                            interrupted = True
                            run_scope.cancel(reason="interrupted by the user (Ctrl+C)")
                            return

                await nursery.start(on_sigint)
            with run_scope:
                report = await run_checks(
                    target,
                    options,
                    only=only,
                    skip=skip,
                    eras=eras,
                    on_result=on_result,
                    on_eras=on_eras,
                )
            nursery.cancel_scope.cancel()
        if report is None:
            report = Report(
                target.describe(),
                target.transport,
                spoken,
                _in_report_order(finished),
                trio.current_time() - started,
                interrupted=True,
            )
    if text is not None:
        text.finish(report)
    else:
        writers: dict[str, Any] = {"json": write_json, "markdown": write_markdown}
        writers[output](report, out)
    out.flush()
    if interrupted:
        print_error(
            err, f"interrupted (Ctrl+C): the report holds the {len(finished)} checks that finished"
        )
        return INTERRUPTED
    return FAILED if report.failed else 0
