"""Every code sample of the documentation runs, and prints what the pages say.

The pages include the files of ``docs/samples/`` with ``literalinclude``; each
test here runs one of them as a reader would (``python docs/samples/NAME.py``,
bounded by a timeout), and a last test checks that every sample file is run by
some test and included by some page.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import trio

import trio_mcp

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "docs" / "samples"
#: The spawned servers import this checkout's trio_mcp.
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src")}

#: Samples that other samples start as their server: first_host.py and
#: shutdown.py spawn "first_server.py".
SERVERS = ("first_server.py",)


def text_of(block: object) -> str:
    """The text of a content block that must be text."""
    assert isinstance(block, trio_mcp.types.TextContent), block
    return block.text


def text_of_resource(contents: object) -> str:
    assert isinstance(contents, trio_mcp.types.TextResourceContents), contents
    return contents.text


def run_sample(name: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, str(SAMPLES / name), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env=ENV,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc


def test_first_host_starts_the_first_server_and_calls_it_in_both_eras() -> None:
    lines = run_sample("first_host.py").stdout.splitlines()
    session = [
        "  add: Add two integers.",
        "  count: Count slowly, reporting progress after each number.",
        "add -> 5",
        "  progress 1 / 3",
        "  progress 2 / 3",
        "  progress 3 / 3",
        "count -> counted to 3",
    ]
    assert lines == [
        "connected to first speaking 2025-11-25",
        *session,
        "connected to first speaking 2026-07-28",
        *session,
    ]


def test_watch_cancel_shows_both_sides_records_in_both_eras() -> None:
    out = run_sample("watch_cancel.py").stdout
    for era in ("legacy", "modern"):
        block = out.split(f"era={era}\n")[1].split("era=")[0].splitlines()
        assert sorted(block) == sorted(
            [
                "  client: deadline hit: True",
                "  server: the handler was cancelled",
                "  client record: cancelled by deadline",
                "  server record: cancelled by peer",
            ]
        )
        assert block[-1] == "  server record: cancelled by peer"


def test_progress_extends_the_timeout_and_silence_ends_it() -> None:
    lines = run_sample("progress_timeout.py").stdout.splitlines()
    assert lines == [
        *(f"  progress {step}/20" for step in range(1, 21)),
        "steady: 20 steps done",
        "quiet: RequestTimeout: tools/call timed out after 1s without progress",
        "steady with max_duration: RequestTimeout: tools/call timed out after 2s in total",
    ]


def test_shutdown_cancels_the_call_and_the_server_exits_on_end_of_input() -> None:
    lines = run_sample("shutdown.py").stdout.splitlines()
    assert lines == [
        "calling count, which takes 10 s",
        "server process: stdin_closed",
        "server process: exited with status 0",
        "the call: cancelled by deadline",
        "the session: closed",
    ]


@pytest.mark.spec("TK-11", "TK-12")
def test_tasks_sample_answers_at_once_then_completes() -> None:
    """The task example (it was the README's): answered at once (working),
    then waited for and its result read."""
    lines = run_sample("tasks.py").stdout.splitlines()
    assert lines == ["TaskState.WORKING", "TaskState.COMPLETED rendered 20 frames"]


def test_testing_sample_passes_under_pytest() -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            str(SAMPLES / "testing_my_server.py"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env=ENV,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"\b3 passed\b", proc.stdout)


async def _forecast(server_script: str) -> tuple[str, list[float], list[str]]:
    seen: list[float] = []
    async with trio_mcp.open_stdio_client(
        sys.executable, [str(SAMPLES / server_script)], env={"PYTHONPATH": str(ROOT / "src")}
    ) as client:
        result = await client.call_tool(
            "forecast", {"city": "Oslo", "days": 2}, on_progress=lambda p: seen.append(p.progress)
        )
        resources = [str(r.uri) for r in client.resources.values()]
        return text_of(result.content[0]), seen, resources


async def test_the_side_by_side_servers_answer_alike() -> None:
    with trio.fail_after(60):
        ours = await _forecast("sdk_side_trio_mcp.py")
        theirs = await _forecast("sdk_side_official.py")
    assert ours == theirs == ("Oslo: sunny for 2 days", [1.0, 2.0], ["weather://cities"])


async def test_http_deploy_serves_with_workers_and_needs_the_token() -> None:
    proc = await trio.lowlevel.open_process(
        [sys.executable, str(SAMPLES / "http_deploy.py"), "0"],
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env=ENV,
    )
    try:
        assert proc.stderr is not None
        with trio.fail_after(60):
            said = b""
            while b"\n" not in said:  # the URL, once every worker listens
                chunk = await proc.stderr.receive_some()
                assert chunk, "the server exited before listening"
                said += chunk
            [url] = re.findall(r"http://127\.0\.0\.1:\d+/mcp", said.decode())
            headers = {"Authorization": "Bearer dev-token"}
            async with trio_mcp.open_http_client(url, headers=headers) as client:
                result = await client.call_tool("whoami", {})
                assert text_of(result.content[0]) == "alice"
            with pytest.raises(trio_mcp.HandshakeRefused) as refused:
                async with trio_mcp.open_http_client(url):
                    pass
            assert refused.value.status == 401
    finally:
        proc.send_signal(signal.SIGINT)
        with trio.fail_after(30):
            assert await proc.wait() == 0


def test_the_timeline_sample_prints_the_table_and_writes_the_page(tmp_path: Path) -> None:
    page = tmp_path / "timeline.html"
    lines = [line for line in run_sample("timeline.py", str(page)).stdout.splitlines() if line]
    assert [line.split()[1:4] for line in lines[1:]] == [
        ["initialize", "outbound", "completed"],
        ["tools/list", "outbound", "completed"],
        ["tools/call", "outbound", "completed"],
        ["tools/call", "outbound", "cancelled"],
        ["tools/call", "outbound", "completed"],
        ["tools/call", "outbound", "completed"],
        *[["tasks/get", "outbound", "completed"]] * (len(lines) - 7),
    ]
    assert lines[4].endswith("deadline: caller deadline")
    text = page.read_text()
    assert text.count('class="lane task"') == 1
    assert text.count('class="progress"') == 6


def test_the_telemetry_sample_shows_one_trace_with_no_change_to_the_code() -> None:
    lines = run_sample("telemetry.py").stdout.splitlines()
    assert lines[:3] == [
        "spans: CLIENT tools/call echo / SERVER tools/call echo",
        "one trace: True",
        "the server span's parent is the client span: True",
    ]
    assert "'gen_ai.tool.name': 'echo'" in lines[3]
    assert "mcp.server.operation.duration" in lines[4]


def test_every_sample_is_run_and_included() -> None:
    this = Path(__file__).read_text()
    pages = "\n".join(
        page.read_text()
        for page in (ROOT / "docs").rglob("*.md")
        if not {"_build", "_generated"} & set(page.parts)
    )
    for sample in sorted(SAMPLES.glob("*.py")):
        # Run here, or by the test of the page it belongs to.
        runners = this + (ROOT / "tests" / "auth" / "test_oauth_readme.py").read_text()
        assert f'"{sample.name}"' in runners, f"no test runs docs/samples/{sample.name}"
        assert f"samples/{sample.name}" in pages, f"no page includes docs/samples/{sample.name}"


async def test_notes_server_saves_reads_and_prompts() -> None:
    """The complete server of the stdio how-to (it was the README's), over real stdio."""
    with trio.fail_after(60):
        async with trio_mcp.open_stdio_client(
            sys.executable,
            [str(SAMPLES / "notes_server.py")],
            env={"PYTHONPATH": str(ROOT / "src")},
        ) as client:
            saved = await client.call_tool("save", {"name": "todo", "text": "milk"})
            assert saved.structured_content == {"name": "todo", "size": 4}
            refused = await client.call_tool("save", {"name": "no way", "text": "x"})
            assert refused.is_error
            assert text_of(refused.content[0]) == "bad name 'no way'"
            assert list(client.resource_templates) == ["note://{name}"]
            read = await client.read_resource("note://todo")
            assert text_of_resource(read.contents[0]) == "milk"
            prompt = await client.get_prompt("summarise", {"name": "todo"})
            assert text_of(prompt.messages[0].content) == "Summarise this note:\nmilk"


def test_modern_rounds_run_the_handler_twice_but_place_the_order_once() -> None:
    lines = run_sample("modern_rounds.py").stdout.splitlines()
    assert lines == [
        "era=legacy",
        "  server: the handler runs",
        "  server: placed order 1 for a lamp",
        "  client: asked: Buy a lamp?",
        "  client: result: bought",
        "era=modern",
        "  server: the handler runs",
        "  server: placed order 2 for a lamp",
        "  client: asked: Buy a lamp?",
        "  server: the handler runs",
        "  client: result: bought",
    ]


def test_the_trace_command_of_the_first_server_page_runs() -> None:
    """``trio-mcp trace -- python first_server.py``, as the page says, run in docs/samples."""
    page = (ROOT / "docs" / "tutorial" / "first-server.md").read_text()
    assert "trio-mcp trace -- python first_server.py" in page
    proc = subprocess.run(
        [sys.executable, "-m", "trio_mcp", "trace", "--", sys.executable, "first_server.py"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=SAMPLES,
        env=ENV,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "tools/list" in proc.stdout
    assert "exited after stdin was closed (status 0)" in proc.stdout


def test_one_call_frames_opens_each_era_its_own_way() -> None:
    out = run_sample("one_call_frames.py").stdout
    legacy, modern = out.split("== modern\n")
    methods = re.compile(r'^-> .*?"method":"([^"]+)"', flags=re.MULTILINE)
    assert methods.findall(legacy) == ["initialize", "notifications/initialized", "tools/call"]
    assert methods.findall(modern) == ["server/discover", "tools/call"]
    assert legacy.count("<- ") == modern.count("<- ") == 2
    assert '"structuredContent":{"result":5}' in modern


async def test_scale_out_serves_on_redis_and_drains_on_sigterm(redis_url: str) -> None:
    """``scale_out.py``: one instance on a real Redis (bus, tasks, nonces), its
    lifespan's value in a handler; SIGTERM drains it and it exits by itself."""
    env = {**ENV, "REDIS_URL": redis_url, "DRAIN_DELAY": "0"}
    env["TRIO_MCP_REQUEST_STATE_KEY"] = "k" * 64
    proc = await trio.lowlevel.open_process(
        [sys.executable, str(SAMPLES / "scale_out.py"), "0"],
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env=env,
    )
    said = b""
    try:
        assert proc.stderr is not None
        with trio.fail_after(60):
            while b"\n" not in said:
                chunk = await proc.stderr.receive_some()
                assert chunk, "the server exited before listening"
                said += chunk
            [url] = re.findall(r"http://127\.0\.0\.1:\d+/mcp", said.decode())
            async with trio_mcp.open_http_client(url, era="modern", remember_era=False) as client:
                result = await client.call_tool("whoami", {})
                assert result.structured_content == {"result": proc.pid}
                async with client.resource_updates("notes://board") as updates:
                    await client.call_tool("touch", {})
                    assert await updates.receive() == "notes://board"
            proc.send_signal(signal.SIGTERM)
            while chunk := await proc.stderr.receive_some():
                said += chunk
            assert await proc.wait() == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert (
        "drained: not ready, not accepting, listens completed, in-flight finished, "
        "sessions closed, cancelled"
    ) in said.decode()


def test_extension_middleware_sample_in_both_eras() -> None:
    lines = run_sample("extension_middleware.py").stdout.splitlines()
    calls = (
        "  ['before inbound com.example/shout', 'before outbound com.example/shouted', "
        "'after com.example/shouted', 'after com.example/shout', "
        "'before inbound com.example/count', 'after com.example/count']"
    )
    block = ["  HI stamp ['hi']", "  3", calls]
    assert lines == [
        "legacy {'com.example/shout': {'loud': True}}",
        *block,
        "modern {'com.example/shout': {'loud': True}}",
        *block,
    ]
