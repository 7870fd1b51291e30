"""The file-serving examples over real stdio subprocesses.

``examples/filesystem.py`` must refuse every way out of its roots with a clear
tool error (an ``isError`` result, TL-14), and ``examples/scan_repository.py``
must report progress per file and stop, without a response, when cancelled.
Each test builds its own tree under ``tmp_path``, is bounded by
``trio.fail_after`` and leaves no process behind (checked by pid).
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

import trio_mcp
from trio_mcp.protocol import Progress
from trio_mcp.transports import ExitStep, StdioProcess, open_stdio_process

ROOT = Path(__file__).resolve().parents[1]
FILESYSTEM = str(ROOT / "examples" / "filesystem.py")
SCAN_REPOSITORY = str(ROOT / "examples" / "scan_repository.py")
#: The spawned servers import this checkout's trio_mcp.
CHILD_ENV = {"PYTHONPATH": str(ROOT / "src")}


class Recording(trio.abc.Channel[bytes]):
    """A transport that passes frames through and keeps each one, decoded."""

    def __init__(self, inner: StdioProcess) -> None:
        self.inner = inner
        self.sent: list[dict[str, Any]] = []
        self.received: list[dict[str, Any]] = []

    async def send(self, value: bytes) -> None:
        self.sent.append(json.loads(value))
        await self.inner.send(value)

    async def receive(self) -> bytes:
        frame = await self.inner.receive()
        self.received.append(json.loads(frame))
        return frame

    async def aclose(self) -> None:
        await self.inner.aclose()


@asynccontextmanager
async def example_client(
    script: str, roots: list[Path], stderr: Callable[[str], None] | None = None
) -> AsyncIterator[tuple[trio_mcp.Client, Recording]]:
    """Spawn *script* with *roots*; yield a connected client and its recording transport."""
    async with open_stdio_process(
        sys.executable, [script, *map(str, roots)], env=CHILD_ENV, stderr=stderr
    ) as process:
        recording = Recording(process)
        async with trio_mcp.open_client(recording) as client:
            yield client, recording
    assert process.exit_step is ExitStep.STDIN_CLOSED
    assert process.returncode == 0


def _text(result: Any) -> str:
    return "\n".join(block.text for block in result.content)


@pytest.fixture
def tree(tmp_path: Path) -> dict[str, Path]:
    """A root with files, a symlink inside and symlinks out; a secret outside;
    a sibling whose name has the root's name as a prefix."""
    root = tmp_path / "data"
    (root / "sub").mkdir(parents=True)
    (root / "a.txt").write_text("alpha\n")
    (root / "sub" / "b.txt").write_text("beta\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("TOP SECRET\n")
    sibling = tmp_path / "data2"  # "/…/data" is a string prefix of "/…/data2"
    sibling.mkdir()
    (sibling / "c.txt").write_text("TOP SECRET too\n")
    (root / "inside_link").symlink_to(root / "a.txt")
    (root / "file_escape").symlink_to(outside / "secret.txt")
    (root / "dir_escape").symlink_to(outside)
    return {"root": root, "outside": outside, "sibling": sibling}


@pytest.mark.spec("SI-01")
@pytest.mark.spec("TL-14")
async def test_filesystem_reads_inside_its_root(tree: dict[str, Path]) -> None:
    root = tree["root"]
    with trio.fail_after(30):
        async with example_client(FILESYSTEM, [root]) as (client, _):
            relative = await client.call_tool("read_file", {"path": "a.txt"})
            absolute = await client.call_tool("read_file", {"path": str(root / "sub" / "b.txt")})
            via_link = await client.call_tool("read_file", {"path": "inside_link"})
            listing = await client.call_tool("list_directory", {"path": "."})
            not_a_file = await client.call_tool("read_file", {"path": "sub"})
    assert not relative.is_error
    assert _text(relative) == "alpha\n"
    assert not absolute.is_error
    assert _text(absolute) == "beta\n"
    assert not via_link.is_error
    assert _text(via_link) == "alpha\n"
    assert not listing.is_error
    assert _text(listing).splitlines() == [
        "a.txt",
        "dir_escape/",
        "file_escape",
        "inside_link",
        "sub/",
    ]
    assert not_a_file.is_error
    assert "is not a file" in _text(not_a_file)


# Each way out of the root, with the words the refusal must contain.
ESCAPES = [
    ("read_file", "{outside}/secret.txt", "outside the allowed roots"),
    ("read_file", "{sibling}/c.txt", "outside the allowed roots"),
    ("list_directory", "{sibling}", "outside the allowed roots"),
    ("list_directory", "/", "outside the allowed roots"),
    ("read_file", "../outside/secret.txt", "'..' is not allowed"),
    ("read_file", "sub/../a.txt", "'..' is not allowed"),
    ("read_file", "{root}/../outside/secret.txt", "'..' is not allowed"),
    ("read_file", "file_escape", "outside the allowed roots"),
    ("list_directory", "dir_escape", "outside the allowed roots"),
    ("read_file", "dir_escape/secret.txt", "outside the allowed roots"),
    ("read_file", "a.txt\x00.png", "NUL"),
    ("list_directory", "\x00", "NUL"),
]


@pytest.mark.spec("SI-01")
@pytest.mark.spec("TL-14")
async def test_filesystem_refuses_every_escape_with_a_tool_error(
    tree: dict[str, Path],
) -> None:
    paths = {name: str(path) for name, path in tree.items()}
    with trio.fail_after(30):
        async with example_client(FILESYSTEM, [tree["root"]]) as (client, recording):
            results = [
                await client.call_tool(tool, {"path": path.format(**paths)})
                for tool, path, _ in ESCAPES
            ]
            # The session goes on after every refusal.
            still_fine = await client.call_tool("read_file", {"path": "a.txt"})
    for (tool, path, words), result in zip(ESCAPES, results, strict=True):
        assert result.is_error, (tool, path)
        assert words in _text(result), (tool, path, _text(result))
    assert _text(still_fine) == "alpha\n"
    # Nothing from outside the root crossed the wire, in any frame.
    wire = json.dumps(recording.received)
    assert "SECRET" not in wire


def _repository(tmp_path: Path, files: int) -> Path:
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    for i in range(files):
        # File i holds i matching lines (and one that does not match).
        lines = ["TODO: item"] * i + ["done"]
        (repo / "pkg" / f"m{i}.py").write_text("\n".join(lines) + "\n")
    return repo


@pytest.mark.spec("PG-03")
@pytest.mark.spec("PG-04")
async def test_scan_repository_reports_progress_per_file(tmp_path: Path) -> None:
    repo = _repository(tmp_path, files=5)
    seen: list[Progress] = []
    with trio.fail_after(30):
        async with example_client(SCAN_REPOSITORY, [repo]) as (client, _):
            result = await client.call_tool(
                "scan_repository",
                {"path": str(repo), "pattern": "TODO"},
                on_progress=seen.append,
            )
            outside = await client.call_tool(
                "scan_repository", {"path": str(tmp_path), "pattern": "TODO"}
            )
    assert not result.is_error
    assert _text(result) == "10 matching lines in 5 files"  # 0+1+2+3+4
    assert [(p.progress, p.total) for p in seen] == [(i, 5) for i in range(1, 6)]
    assert [p.message for p in seen] == [f"pkg/m{i}.py" for i in range(5)]
    assert outside.is_error
    assert "outside the server's roots" in _text(outside)


@pytest.mark.spec("CN-05")
@pytest.mark.spec("SI-03")
@pytest.mark.spec("SI-08", "SI-09")
async def test_scan_repository_cancelled_midway_stops_and_sends_no_response(
    tmp_path: Path,
) -> None:
    repo = _repository(tmp_path, files=4)
    stderr_lines: list[str] = []
    seen: list[Progress] = []
    first_file_done = trio.Event()
    handler_stopped = trio.Event()

    def on_stderr(line: str) -> None:
        stderr_lines.append(line)
        if line.startswith("scan_repository: cancelled"):
            handler_stopped.set()

    def on_progress(progress: Progress) -> None:
        seen.append(progress)
        first_file_done.set()

    with trio.fail_after(30):
        async with example_client(SCAN_REPOSITORY, [repo], on_stderr) as (client, recording):
            # The example is dual-era: this cancel is 2026-07-28's, over a real pipe.
            assert client.era == "modern"
            async with trio.open_nursery() as nursery:

                async def scan() -> None:
                    # A long pause after each file: it is inside that pause
                    # (after file 1) that the cancel arrives.
                    await client.call_tool(
                        "scan_repository",
                        {"path": str(repo), "pattern": "TODO", "delay": 3600},
                        on_progress=on_progress,
                    )
                    raise AssertionError("the cancelled call returned")

                nursery.start_soon(scan)
                await first_file_done.wait()
                nursery.cancel_scope.cancel()  # the client sends notifications/cancelled
            # The handler says where it stopped (on its stderr, the server's log).
            await handler_stopped.wait()
            # Anything the server sent for the call (it is queued as the
            # handler unwinds) would be on stdout before these pongs.
            await client.ping()
            await client.ping()
    call = next(m for m in recording.sent if m.get("method") == "tools/call")
    listens = {m["id"] for m in recording.sent if m.get("method") == "subscriptions/listen"}
    cancels = [m for m in recording.sent if m.get("method") == "notifications/cancelled"]
    # The call's cancel, then (leaving the client) those of its 2026-07-28
    # list subscription, if it had one.
    ids = [m["params"]["requestId"] for m in cancels]
    assert ids[0] == call["id"]
    assert set(ids[1:]) <= listens
    assert "scan_repository: cancelled after 1 of 4 files" in stderr_lines
    assert [p.progress for p in seen] == [1]
    assert not [m for m in recording.received if m.get("id") == call["id"]]
