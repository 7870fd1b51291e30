"""``serve_http(..., workers=N)``: each worker process enters the server's
lifespan once before serving and leaves it once when stopped."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
from process_check import child_pids, running
from scaleout_app import LIFESPAN_LOG_ENV

from trio_mcp import open_http_client, serve_http


async def test_the_lifespan_is_entered_and_left_once_per_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "lifespan.log"
    monkeypatch.setenv(LIFESPAN_LOG_ENV, str(log))
    before = child_pids()
    async with trio.open_nursery() as nursery:
        url = await nursery.start(
            lambda task_status: serve_http(
                "scaleout_app:build", workers=2, stateless=True, task_status=task_status
            )
        )
        pids = child_pids() - before
        assert len(pids) == 2
        with trio.fail_after(30):
            async with open_http_client(f"{url}/mcp", era="modern") as client:
                answered = await client.call_tool("whoami", {})
        assert answered.structured_content is not None
        assert answered.structured_content["result"] in pids
        nursery.cancel_scope.cancel()
    assert not [pid for pid in pids if running(pid)]
    lines = log.read_text().split("\n")[:-1]
    assert sorted(lines) == sorted(
        [f"enter {pid}" for pid in pids] + [f"exit {pid}" for pid in pids]
    )
    for pid in pids:  # entered before it was left
        assert lines.index(f"enter {pid}") < lines.index(f"exit {pid}")
