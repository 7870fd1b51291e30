"""``serve_http(..., workers=N)``: each worker process enters the server's
lifespan once before serving and leaves it once when stopped, and drains on
the SIGTERM that stopping the server sends it."""

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


async def test_each_worker_drains_and_answers_what_is_in_flight(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A call in flight when the server is stopped is answered after its
    worker began draining (step 3), before the worker exits."""
    log = tmp_path / "lifespan.log"
    monkeypatch.setenv(LIFESPAN_LOG_ENV, str(log))
    before = child_pids()
    answered: list[int] = []
    with trio.fail_after(60):
        async with trio.open_nursery() as outer:
            serving = trio.CancelScope()

            async def serve(task_status: trio.TaskStatus[str]) -> None:
                with serving:
                    await serve_http(
                        "scaleout_app:build", workers=2, stateless=True, task_status=task_status
                    )

            url = await outer.start(serve)
            pids = child_pids() - before
            listener = (await trio.open_tcp_listeners(0, host="127.0.0.1"))[0]
            gate = listener.socket.getsockname()[1]

            async def call() -> None:
                async with open_http_client(f"{url}/mcp", era="modern") as client:
                    result = await client.call_tool("until_drained", {"gate": gate})
                assert result.structured_content is not None
                pid = result.structured_content["result"]
                assert isinstance(pid, int)
                answered.append(pid)

            outer.start_soon(call)
            async with listener, await listener.accept() as worker:
                said = b""
                while not said.endswith(b"\n"):
                    said += await worker.receive_some(64)
            in_flight_on = int(said)
            assert not answered
            serving.cancel()  # SIGTERM to every worker: each drains
    assert answered == [in_flight_on]
    assert in_flight_on in pids
    assert not [pid for pid in pids if running(pid)]
    assert sorted(log.read_text().split("\n")[:-1]) == sorted(
        [f"enter {pid}" for pid in pids] + [f"exit {pid}" for pid in pids]
    )
