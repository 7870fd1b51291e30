"""The report of a run: a terminal table, JSON for CI, Markdown for an issue.

The table has one line per check (colour only on a terminal), then every
failure with the frames that show it, then one summary line.
:class:`StreamedText` writes the same table as the run goes, a result as soon
as its check finishes, and the failures and the summary at the end (also
after Ctrl+C, for the checks that finished). ``--json``
writes :meth:`Report.to_json`; ``--markdown`` a table and the failures, each
with its frames in a collapsed block, ready to paste into an issue.

Spec: none (output only).
"""

from __future__ import annotations

import json
from typing import TextIO

from ._checks import ALL_CHECKS
from ._model import CheckResult, Outcome
from ._runner import ERA_NAMES, Report
from ._wire import shorten

_COLOURS = {Outcome.PASS: "32", Outcome.FAIL: "31", Outcome.SKIP: "33"}
#: Frames shown per failure in the terminal (the JSON and Markdown keep all recorded).
TERMINAL_FRAMES = 12
#: Characters of one frame shown in the terminal and Markdown reports.
FRAME_CHARS = 300


def _paint(text: str, outcome: Outcome, colour: bool) -> str:
    return f"\x1b[{_COLOURS[outcome]}m{text}\x1b[0m" if colour else text


def summary(report: Report) -> str:
    """The one-line summary: counts, time, and the verdict."""
    counts = ", ".join(
        f"{report.count(o)} {word}"
        for o, word in (
            (Outcome.PASS, "passed"),
            (Outcome.FAIL, "failed"),
            (Outcome.SKIP, "skipped"),
        )
    )
    verdict = "FAILED" if report.failed else "OK"
    if report.interrupted:
        return (
            f"interrupted (Ctrl+C): {len(report.results)} checks finished: {counts} "
            f"in {report.seconds:.1f}s"
        )
    return f"{len(report.results)} checks: {counts} in {report.seconds:.1f}s: {verdict}"


def _eras(report: Report) -> str:
    return ", ".join(ERA_NAMES[e] for e in report.eras) or "none"


def _frames(result: CheckResult, limit: int | None = None) -> list[str]:
    frames = result.frames if limit is None else result.frames[-limit:]
    skipped = len(result.frames) - len(frames)
    lines = [f"... {skipped} earlier frame(s)"] if skipped else []
    lines += [f"{f.at:7.3f} {f.direction} {shorten(f.text, FRAME_CHARS)}" for f in frames]
    return lines


def _header(target: str, transport: str) -> str:
    return f"trio-mcp check: {target} ({transport})"


def _eras_line(eras: tuple[str, ...]) -> str:
    return f"eras: {', '.join(ERA_NAMES[e] for e in eras) or 'none'}"


class StreamedText:
    """The terminal report, written to *out* as the run goes.

    :meth:`eras` once the server's eras are known, :meth:`result` for each
    check as it finishes (in the order they finish), :meth:`finish` with the
    whole report (the failures with their frames, and the summary).
    """

    def __init__(
        self, out: TextIO, target: str, transport: str, *, colour: bool | None = None
    ) -> None:
        self.out = out
        self.colour = out.isatty() if colour is None else colour
        self.width = max(len(c.id) for c in ALL_CHECKS)
        print(_header(target, transport), file=out, flush=True)

    def eras(self, eras: tuple[str, ...]) -> None:
        print(_eras_line(eras), file=self.out)
        print(file=self.out, flush=True)

    def result(self, r: CheckResult) -> None:
        mark = _paint(f"{r.outcome.value:4}", r.outcome, self.colour)
        rows = " ".join(r.rows)
        print(
            f"  {mark}  {r.era:6}  {r.check_id:{self.width}}  {r.seconds:5.2f}s  {rows}",
            file=self.out,
        )
        print(f"  {'':4}  {'':6}  {r.detail}", file=self.out, flush=True)

    def finish(self, report: Report) -> None:
        out = self.out
        failed = report.failed
        if failed:
            print(file=out)
            print("Failures, with the frames that show them:", file=out)
            for r in failed:
                print(file=out)
                title = _paint("FAIL", Outcome.FAIL, self.colour)
                print(f"{title} {r.era} {r.check_id} ({' '.join(r.rows)}): {r.detail}", file=out)
                for line in _frames(r, TERMINAL_FRAMES):
                    print(f"    {line}", file=out)
        print(file=out)
        print(summary(report), file=out, flush=True)


def write_text(report: Report, out: TextIO, *, colour: bool | None = None) -> None:
    """The terminal report of a finished run (colour when *out* is a terminal, unless told)."""
    text = StreamedText(out, report.target, report.transport, colour=colour)
    text.eras(report.eras)
    for r in report.results:
        text.result(r)
    text.finish(report)


def write_json(report: Report, out: TextIO) -> None:
    json.dump(report.to_json(), out, indent=2)
    out.write("\n")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def write_markdown(report: Report, out: TextIO) -> None:
    """A report a maintainer can paste into an issue."""
    print(f"## `trio-mcp check` report: `{report.target}`", file=out)
    print(file=out)
    print(f"Transport: {report.transport}; eras: {_eras(report)}. {summary(report)}", file=out)
    print(file=out)
    print("| result | era | check | spec rows | detail |", file=out)
    print("|---|---|---|---|---|", file=out)
    for r in report.results:
        print(
            f"| {r.outcome.value} | {r.era} | `{r.check_id}` | {' '.join(r.rows)} | "
            f"{_cell(r.detail)} |",
            file=out,
        )
    for r in report.failed:
        print(file=out)
        print(f"### FAIL `{r.check_id}` ({r.era})", file=out)
        print(file=out)
        print(_cell(r.detail), file=out)
        print(file=out)
        print("<details><summary>frames</summary>", file=out)
        print(file=out)
        print("```", file=out)
        for line in _frames(r):
            print(line, file=out)
        print("```", file=out)
        print(file=out)
        print("</details>", file=out)
