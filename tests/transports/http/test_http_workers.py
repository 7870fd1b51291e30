"""``serve_http(..., workers=N)``: one server as N processes on one socket.

Real worker processes on 127.0.0.1, port 0, each importing ``workers_app``.
Which worker accepts a connection is the kernel's choice, so the tests make
it for the kernel: the ``hold`` tool blocks its worker's event loop until the
test opens that worker's gate, and a held worker accepts nothing, so the next
connection reaches the other one. Every cross-worker test is thus a fixed
sequence, not a hope (no rounds until the kernel happens to alternate).
Shutdown is checked by pid: every worker is gone when the call ends.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import httpx
import orjson
import pytest
import trio
import workers_app
from http_helpers import ACCEPT_BOTH, LATEST, sse_messages
from process_check import child_pids, running

from trio_mcp import RequestStateSealer, Server, serve_http
from trio_mcp._server._request_state import KEY_ENV, StateRejection, key_from_env
from trio_mcp._server._workers import WorkerExited, _stop
from trio_mcp.protocol._headers import request_headers

TARGET = "workers_app:build"
T = TypeVar("T")


@asynccontextmanager
async def workers(
    target: Any = TARGET, count: int = 2, **options: Any
) -> AsyncIterator[tuple[str, set[int]]]:
    """Serve *target* with *count* workers; yield (base URL, the workers' pids).

    The handshake era is served ``stateless=True`` unless *options* say
    otherwise. On leaving, checks that every worker process is gone.
    """
    options.setdefault("stateless", True)
    before = child_pids()
    async with trio.open_nursery() as nursery:
        url = await nursery.start(
            lambda task_status: serve_http(
                target, workers=count, task_status=task_status, **options
            )
        )
        pids = child_pids() - before
        assert len(pids) == count
        yield url, pids
        nursery.cancel_scope.cancel()
    assert not [pid for pid in pids if running(pid)]


async def call(url: str, tool: str, arguments: dict[str, Any] | None = None) -> Any:
    """One stateless handshake-era ``tools/call`` on a connection of its own."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments or {}},
    }
    headers = {
        "accept": ACCEPT_BOTH,
        "content-type": "application/json",
        "mcp-protocol-version": LATEST,
    }
    async with httpx.AsyncClient(timeout=httpx.Timeout(30.0)) as http:
        response = await http.post(f"{url}/mcp", content=orjson.dumps(body), headers=headers)
    assert response.status_code == 200, response.text
    [message] = sse_messages(response.text)
    return structured(message["result"])


MODERN = "2026-07-28"


async def modern_call(
    url: str,
    tool: str,
    arguments: dict[str, Any] | None = None,
    *,
    request_id: int = 1,
    capabilities: dict[str, Any] | None = None,
    **params: Any,
) -> dict[str, Any]:
    """One 2026-07-28 ``tools/call`` (raw: ``_meta`` and the headers a client
    sends), on a connection of its own; the JSON-RPC result."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": capabilities or {},
    }
    body_params = {"name": tool, "arguments": arguments or {}, "_meta": meta, **params}
    body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": body_params}
    headers = {
        "accept": ACCEPT_BOTH,
        "content-type": "application/json",
        **request_headers("tools/call", body_params),
    }
    async with httpx.AsyncClient(timeout=httpx.Timeout(30.0)) as http:
        response = await http.post(f"{url}/mcp", content=orjson.dumps(body), headers=headers)
    assert response.status_code == 200, response.text
    assert "mcp-session-id" not in response.headers  # stateless: no session minted
    if response.headers["content-type"].startswith("text/event-stream"):
        [message] = sse_messages(response.text)
    else:
        message = response.json()
    assert message["id"] == request_id
    result: dict[str, Any] = message["result"]
    return result


def structured(result: dict[str, Any]) -> Any:
    content = result["structuredContent"]
    return content["result"] if set(content) == {"result"} else content


class Gates:
    """Hold workers of a two-worker server, one at a time, by their pid.

    ``hold()`` sends a ``hold`` call in the background and returns the pid of
    the worker now blocked in it (the worker connects to this loopback gate
    and says so); ``open(pid)`` lets that worker go and waits for the call's
    answer. With one worker held, every new connection is accepted by the
    other: a held worker's loop never calls ``accept``.
    """

    def __init__(self, url: str, listener: trio.SocketListener, nursery: trio.Nursery) -> None:
        self._url = url
        self._listener = listener
        self._nursery = nursery
        self._held: dict[int, trio.SocketStream] = {}
        self._answered: dict[int, trio.Event] = {}

    async def hold(self) -> int:
        port = self._listener.socket.getsockname()[1]
        self._nursery.start_soon(self._send_hold, port)
        with trio.fail_after(30):
            worker = await self._listener.accept()
            said = b""
            while not said.endswith(b"\n"):
                chunk = await worker.receive_some(16)
                assert chunk, "a worker hung up before saying its pid"
                said += chunk
        pid = int(said)
        self._held[pid] = worker
        self._answered[pid] = trio.Event()
        return pid

    async def open(self, pid: int) -> None:
        worker = self._held.pop(pid)
        await worker.send_all(b"go\n")
        await worker.aclose()
        with trio.fail_after(30):
            await self._answered[pid].wait()
        del self._answered[pid]

    async def open_all(self) -> None:
        for pid in list(self._held):
            await self.open(pid)

    async def _send_hold(self, port: int) -> None:
        pid = structured(await modern_call(self._url, "hold", {"gate": port}))
        self._answered[pid].set()


@asynccontextmanager
async def gates(url: str) -> AsyncIterator[Gates]:
    """Gates over *url*'s workers; on leaving, every held worker is let go and
    every ``hold`` call must have been answered."""
    [listener] = await trio.open_tcp_listeners(0, host="127.0.0.1")
    async with listener, trio.open_nursery() as nursery:
        gate = Gates(url, listener, nursery)
        try:
            yield gate
        finally:
            await gate.open_all()


async def on_each_worker(
    gate: Gates, pids: set[int], send: Callable[[int], Awaitable[T]]
) -> tuple[T, T]:
    """``send(pid)`` once on each of the two workers *pids*, *pid* being the
    worker that will serve it: (on one, on the other).

    Hold H, send (reaches the other, O), hold O (H is still held), open H,
    send (reaches H), open O.
    """
    first_held = await gate.hold()
    [other] = pids - {first_held}
    on_other = await send(other)
    assert await gate.hold() == other
    await gate.open(first_held)
    on_first = await send(first_held)
    await gate.open(other)
    return on_other, on_first


@pytest.mark.spec("ST-03")
async def test_two_workers_share_the_traffic_and_answer_every_call() -> None:
    async with workers() as (url, pids), gates(url) as gate:
        held = await gate.hold()
        # Eight concurrent calls while one worker is blocked: the other answers all.
        answers: list[int] = []

        async def one() -> None:
            answers.append(await call(url, "pid"))

        async with trio.open_nursery() as nursery:
            for _ in range(8):
                nursery.start_soon(one)
        [other] = set(answers)
        assert len(answers) == 8
        await gate.open(held)
        assert {held, other} == pids  # nothing answered by any other process
        assert os.getpid() not in pids


@pytest.mark.spec("ST-03")
async def test_two_workers_share_modern_traffic_on_a_dual_era_endpoint() -> None:
    async with workers(stateless=False) as (url, pids), gates(url) as gate:

        async def served_by(expected: int) -> int:
            pid: int = structured(await modern_call(url, "pid"))
            assert pid == expected
            return pid

        answers = await on_each_worker(gate, pids, served_by)
        assert set(answers) == pids


@pytest.mark.spec("ST-03", "PT-08")
async def test_a_modern_retry_may_land_on_the_other_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    """Round one on one worker, the retry on the other: the state sealed by
    the first opens in the second (the run's shared key), and ``ctx.saved``
    says which worker asked."""
    monkeypatch.delenv(KEY_ENV, raising=False)
    capabilities: dict[str, Any] = {"elicitation": {"form": {}}}
    async with workers(stateless=False) as (url, pids), gates(url) as gate:
        first_held = await gate.hold()
        first = await modern_call(url, "ask", capabilities=capabilities)
        assert first["resultType"] == "input_required"
        [key] = first["inputRequests"]
        asker = await gate.hold()  # the worker that asked: the only one not held
        await gate.open(first_held)
        final = await modern_call(
            url,
            "ask",
            request_id=2,
            capabilities=capabilities,
            inputResponses={key: {"action": "accept", "content": {}}},
            requestState=first["requestState"],
        )
        await gate.open(asker)
        asked, finished, action = final["content"][0]["text"].split()
        assert action == "accept"
        assert (int(asked), int(finished)) == (asker, first_held)
        assert {asker, first_held} == pids


async def rpc(url: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """One stateless handshake-era request on a connection of its own; the
    JSON-RPC message that answers it."""
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    headers = {
        "accept": ACCEPT_BOTH,
        "content-type": "application/json",
        "mcp-protocol-version": LATEST,
    }
    async with httpx.AsyncClient(timeout=httpx.Timeout(30.0)) as http:
        response = await http.post(f"{url}/mcp", content=orjson.dumps(body), headers=headers)
    assert response.status_code == 200, response.text
    [message] = sse_messages(response.text)
    frame: dict[str, Any] = message
    return frame


class TaskWork:
    """The test's end of ``gated_job`` tasks: each task's work connects here
    and says its worker's pid; the test finishes it by sending a byte, and sees
    the end of the stream when the work is cancelled instead."""

    def __init__(self, listener: trio.SocketListener) -> None:
        self.listener = listener
        self.port: int = listener.socket.getsockname()[1]

    async def started(self) -> tuple[int, trio.SocketStream]:
        with trio.fail_after(30):
            stream = await self.listener.accept()
            said = b""
            while not said.endswith(b"\n"):
                chunk = await stream.receive_some(16)
                assert chunk, "the task's work hung up before saying its pid"
                said += chunk
        return int(said), stream


@pytest.mark.spec("ST-03", "TK-12", "TK-16", "TK-18")
async def test_a_task_one_worker_runs_is_served_and_cancelled_by_the_other(
    monkeypatch: pytest.MonkeyPatch, redis_url: str
) -> None:
    """Two workers share a RedisTaskStore. The gates make each step land on
    the worker it names: the task runs on R; ``tasks/get``, ``tasks/result``
    (waiting, then woken by R's write through Redis) and ``tasks/cancel``
    (whose ask stops R's work) are served by the other worker, S."""
    monkeypatch.setenv(workers_app.REDIS_ENV, redis_url)
    monkeypatch.setenv(workers_app.REDIS_ENV + "_PREFIX", f"workers-{os.getpid()}:")
    [listener] = await trio.open_tcp_listeners(0, host="127.0.0.1")
    work = TaskWork(listener)
    async with listener, workers() as (url, pids), gates(url) as gate:
        # -- tasks/get and a waiting tasks/result on S, the task on R.
        served_by = await gate.hold()  # S
        [runs_on] = pids - {served_by}  # R
        created = await rpc(
            url, "tools/call", {"name": "gated_job", "arguments": {"gate": work.port}, "task": {}}
        )
        task_id = created["result"]["task"]["taskId"]
        pid, stream = await work.started()
        assert pid == runs_on
        assert await gate.hold() == runs_on  # R held, its task parked
        await gate.open(served_by)
        got = await rpc(url, "tasks/get", {"taskId": task_id})
        assert got["result"]["status"] == "working"
        results: list[dict[str, Any]] = []

        async def wait_result() -> None:
            results.append(await rpc(url, "tasks/result", {"taskId": task_id}))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(wait_result)
            # The next hold lands on S after the tasks/result connection (the
            # kernel hands connections out in order): S is serving it.
            assert await gate.hold() == served_by
            await gate.open(runs_on)
            await stream.send_all(b"go")  # R finishes the task ...
            await gate.open(served_by)  # ... and S's waiting tasks/result wakes
        await stream.aclose()
        [result] = results
        assert result["result"]["structuredContent"] == {"result": runs_on}
        assert result["result"]["_meta"]["io.modelcontextprotocol/related-task"] == {
            "taskId": task_id
        }

        # -- tasks/cancel on S stops R's work.
        served_by = await gate.hold()
        [runs_on] = pids - {served_by}
        created = await rpc(
            url, "tools/call", {"name": "gated_job", "arguments": {"gate": work.port}, "task": {}}
        )
        task_id = created["result"]["task"]["taskId"]
        pid, stream = await work.started()
        assert pid == runs_on
        assert await gate.hold() == runs_on
        await gate.open(served_by)
        cancelled = await rpc(url, "tasks/cancel", {"taskId": task_id})
        assert cancelled["result"]["status"] == "cancelled"
        await gate.open(runs_on)
        with trio.fail_after(30):
            assert await stream.receive_some(16) == b""  # R's work was cancelled
        await stream.aclose()
        final = await rpc(url, "tasks/get", {"taskId": task_id})
        assert final["result"]["status"] == "cancelled"


async def test_cancelling_stops_the_workers_with_sigterm(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="trio_mcp.http.workers")
    async with workers() as (url, pids):
        assert await call(url, "pid") in pids
    # Both stopped by SIGTERM, gracefully (status 0), none killed.
    stops = [r.getMessage() for r in caplog.records if "stopped, status" in r.getMessage()]
    assert sorted(stops) == sorted(f"HTTP worker pid {pid} stopped, status 0" for pid in pids)


async def test_a_factory_function_is_a_target_and_app_options_reach_the_workers() -> None:
    async with workers(workers_app.build, json_response=True) as (url, pids):
        headers = {
            "accept": ACCEPT_BOTH,
            "content-type": "application/json",
            "mcp-protocol-version": LATEST,
        }
        body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "pid"}}
        async with httpx.AsyncClient() as http:
            response = await http.post(f"{url}/mcp", content=orjson.dumps(body), headers=headers)
        assert response.headers["content-type"].startswith("application/json")
        assert response.json()["result"]["structuredContent"]["result"] in pids


@pytest.mark.spec("PT-08")
async def test_the_workers_of_one_run_accept_each_others_request_state(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)  # the supervisor draws one key for the run
    async with workers() as (url, pids), gates(url) as gate:
        sealed = await on_each_worker(gate, pids, lambda _: call(url, "seal"))
        assert {s["pid"] for s in sealed} == pids
        by_pid = {s["pid"]: s["token"] for s in sealed}
        # Each worker opens the token the other one sealed.
        [(one, one_token), (other, other_token)] = by_pid.items()
        token_for = {one: other_token, other: one_token}
        opened = await on_each_worker(
            gate, pids, lambda serving: call(url, "unseal", {"token": token_for[serving]})
        )
        assert {(o["pid"], o["sealed_by"]) for o in opened} == {(one, other), (other, one)}
    # Not this process's key: the supervisor's key was for its workers only.
    with pytest.raises(Exception, match="integrity") as refused:
        RequestStateSealer().open(
            by_pid[min(pids)], method="tools/call", params=workers_app.STATE_PARAMS
        )
    assert getattr(refused.value, "reason", None) is StateRejection.TAMPERED


@pytest.mark.spec("PT-08")
async def test_a_configured_key_is_the_workers_key(monkeypatch: pytest.MonkeyPatch) -> None:
    key = "k" * 64
    monkeypatch.setenv(KEY_ENV, key)
    async with workers() as (url, pids), gates(url) as gate:
        sealed = await on_each_worker(gate, pids, lambda _: call(url, "seal"))
        assert {s["pid"] for s in sealed} == pids
    # A sealer of this process built from the same configuration opens them all,
    # and so does one given the same key explicitly.
    for item in sealed:
        for sealer in (RequestStateSealer(), RequestStateSealer(key.encode())):
            state = sealer.open(item["token"], method="tools/call", params=workers_app.STATE_PARAMS)
            assert state.saved == {"pid": item["pid"]}


async def test_a_worker_that_dies_ends_the_server_and_the_others_stop() -> None:
    before = child_pids()
    with pytest.RaisesGroup(WorkerExited) as group:
        async with trio.open_nursery() as nursery:
            await nursery.start(
                lambda task_status: serve_http(TARGET, workers=2, task_status=task_status)
            )
            pids = child_pids() - before
            victim = min(pids)
            os.kill(victim, signal.SIGKILL)
    [failed] = group.value.exceptions
    assert isinstance(failed, WorkerExited)
    assert failed.pid == victim
    assert failed.returncode == -signal.SIGKILL
    assert "while serving" in str(failed)
    assert not [pid for pid in pids if running(pid)]


async def test_a_worker_that_fails_to_start_fails_the_start() -> None:
    before = child_pids()
    with pytest.raises(WorkerExited, match="before it listened") as failed:
        await serve_http("workers_app:broken", workers=2)
    assert failed.value.returncode == 1
    assert not [pid for pid in child_pids() - before if running(pid)]


@pytest.mark.parametrize(
    ("target", "error", "match"),
    [
        (Server("object"), TypeError, "import path"),
        (lambda: Server("lambda"), TypeError, "not importable"),
        ("workers_app.build", ValueError, "module:name"),
        (42, TypeError, "import path"),
    ],
)
async def test_a_target_a_worker_cannot_import_is_refused_before_any_process(
    target: Any, error: type[Exception], match: str
) -> None:
    before = child_pids()
    with pytest.raises(error, match=match):
        await serve_http(target, workers=2)
    assert child_pids() == before


async def test_unpicklable_app_options_are_refused_before_any_process() -> None:
    before = child_pids()
    with pytest.raises(TypeError, match="picklable"):
        await serve_http(TARGET, workers=2, principal_of=lambda scope: None)
    assert child_pids() == before


async def test_one_worker_serves_an_import_path_in_process() -> None:
    before = child_pids()
    async with trio.open_nursery() as nursery:
        url = await nursery.start(
            lambda task_status: serve_http(TARGET, stateless=True, task_status=task_status)
        )
        assert child_pids() == before
        assert await call(url, "pid") == os.getpid()
        nursery.cancel_scope.cancel()


async def test_a_worker_that_ignores_sigterm_is_killed_after_the_grace(
    autojump_clock: trio.testing.MockClock,
) -> None:
    code = (
        "import signal, sys; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "print('ready', flush=True); sys.stdin.read()"
    )
    process = await trio.lowlevel.open_process(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert process.stdout is not None
    assert process.stdin is not None
    try:
        assert (await process.stdout.receive_some(6)) == b"ready\n"
        start = trio.current_time()
        await _stop(process, 5.0)
        assert process.returncode == -signal.SIGKILL
        assert trio.current_time() - start == pytest.approx(5.0)
    finally:
        await process.stdin.aclose()
        await process.stdout.aclose()
        if process.returncode is None:
            process.kill()
            await process.wait()


def test_key_from_env() -> None:
    assert key_from_env({}) is None
    assert key_from_env({KEY_ENV: ""}) is None
    assert key_from_env({KEY_ENV: "x" * 16}) == b"x" * 16
    with pytest.raises(ValueError, match=KEY_ENV):
        key_from_env({KEY_ENV: "short"})


def test_two_sealers_configured_alike_accept_each_others_states(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(KEY_ENV, "a shared secret, 32 bytes or so")
    first, second = RequestStateSealer(), RequestStateSealer()
    token = first.seal(
        "tools/call", round=1, previous_request_id=1, answers={}, saved={"n": 1}, params={}
    )
    assert second.open(token, method="tools/call", params={}).saved == {"n": 1}
    monkeypatch.delenv(KEY_ENV)
    with pytest.raises(Exception, match="integrity"):
        RequestStateSealer().open(token, method="tools/call", params={})
    # An explicit key still wins over the environment, as text or bytes.
    monkeypatch.setenv(KEY_ENV, "another secret of enough bytes")
    explicit = RequestStateSealer("a shared secret, 32 bytes or so")
    assert explicit.open(token, method="tools/call", params={}).saved == {"n": 1}


# ------------------------------------------------- whole programs, by pid


def children_of(pid: int) -> set[int]:
    found: set[int] = set()
    for path in Path(f"/proc/{pid}/task").glob("*/children"):
        with contextlib.suppress(OSError):
            found.update(int(child) for child in path.read_text().split())
    return found


def spawned_worker(pid: int) -> bool:
    """Is *pid* a process multiprocessing spawned to run a function (hypercorn's worker)?"""
    return b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes()


async def wait_gone(pid: int) -> None:
    """Until *pid* (any process, not only a child) has exited: its pidfd turns readable."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        await trio.lowlevel.wait_readable(fd)
    finally:
        os.close(fd)


async def read_until(stream: trio.abc.ReceiveStream, pattern: re.Pattern[bytes]) -> re.Match[bytes]:
    data = b""
    while (found := pattern.search(data)) is None:
        chunk = await stream.receive_some()
        assert chunk, f"the program ended before printing {pattern.pattern!r}: {data!r}"
        data += chunk
    return found


@asynccontextmanager
async def program(args: list[str], cwd: Path) -> AsyncIterator[tuple[trio.Process, set[int]]]:
    """Run a program; yield it and a set for the pids of its workers.

    Even when the test fails half way, nothing is left behind: the program gets
    SIGTERM (so it stops its workers itself), SIGKILL after 10 s, and then any
    worker the test recorded that still runs is killed by its pid.
    """
    process = await trio.lowlevel.open_process(args, cwd=cwd, stderr=subprocess.PIPE)
    pids: set[int] = set()
    try:
        yield process, pids
    finally:
        with trio.CancelScope(shield=True):
            if process.returncode is None:
                process.terminate()
                with trio.move_on_after(10):
                    await process.wait()
            if process.returncode is None:
                process.kill()
            await process.wait()
            for pid in pids:
                if running(pid):
                    os.kill(pid, signal.SIGKILL)
                await wait_gone(pid)
            assert process.stderr is not None
            await process.stderr.aclose()


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGKILL])
async def test_a_script_serving_its_own_factory_with_run_http_leaves_no_worker(
    stop: signal.Signals,
) -> None:
    """``run_http(build, workers=2)`` under the script's ``__main__`` guard: the
    workers load the script as ``__mp_main__``. SIGTERM stops the script and its
    workers; after a SIGKILL of the script the workers see their stdin end and go."""
    here = Path(__file__).parent
    async with program([sys.executable, "workers_script.py"], here) as (script, pids):
        assert script.stderr is not None
        found = await read_until(script.stderr, re.compile(rb"at (http://\S+)/mcp\n"))
        url = found.group(1).decode()
        pids.update(children_of(script.pid))
        assert len(pids) == 2
        assert await call(url, "pid") in pids
        script.send_signal(stop)
        assert await script.wait() == (0 if stop == signal.SIGTERM else -signal.SIGKILL)
        for pid in pids:
            await wait_gone(pid)
            assert not running(pid)


async def test_the_hypercorn_command_line_serves_the_importable_app_with_workers() -> None:
    """The documented deployment: ``hypercorn --worker-class trio --workers 2
    module:app`` (port 0 is bound by hypercorn's parent, the workers log the URL)."""
    here = Path(__file__).parent
    args = [sys.executable, "-m", "hypercorn", "--worker-class", "trio", "--workers", "2"]
    args += ["--bind", "127.0.0.1:0", "workers_app:app"]
    async with program(args, here) as (hypercorn, pids):
        assert hypercorn.stderr is not None
        found = await read_until(hypercorn.stderr, re.compile(rb"Running on (http://\S+) "))
        url = found.group(1).decode()
        # Its workers, not multiprocessing's resource tracker (also a child).
        pids.update(pid for pid in children_of(hypercorn.pid) if spawned_worker(pid))
        assert len(pids) == 2
        async with gates(url) as gate:
            answers = await on_each_worker(gate, pids, lambda _: call(url, "pid"))
        assert set(answers) == pids
        hypercorn.terminate()
        assert await hypercorn.wait() == 0
        for pid in pids:
            await wait_gone(pid)
            assert not running(pid)
