"""Behind a real HAProxy, with a real redis-server: sticky handshake-era
sessions, the 404 and re-initialization after their instance restarts, and a
reduced ``scripts/cluster`` run (two instances, a rolling restart): every
2026-07-28 call answered, every resource update heard by every listener.

Real clock and real processes; the waits are HAProxy's own health checks
(``Cluster.wait_up``) and the instances' drains.
"""

from __future__ import annotations

from pathlib import Path

import trio
from cluster import Cluster, measure, report

from trio_mcp import MCPError, open_http_client


async def pids_of(client: object, calls: int) -> list[int]:
    answers = []
    for _ in range(calls):
        result = await client.call_tool("whoami", {})  # type: ignore[attr-defined]
        answers.append(result.structured_content["result"])
    return answers


async def test_sessions_stick_and_reinitialize_when_their_instance_restarts(
    tmp_path: Path,
) -> None:
    cluster = Cluster(tmp_path, 2, grace=5.0)
    with trio.fail_after(90):
        async with (
            cluster.running(),
            open_http_client(cluster.url, era="modern", remember_era=False) as modern,
            open_http_client(
                cluster.url, era="legacy", remember_era=False, reinitialize=True
            ) as legacy,
        ):
            # 2026-07-28 requests are spread; a session stays on its instance.
            assert len(set(await pids_of(modern, 6))) == 2
            (home,) = set(await pids_of(legacy, 6))
            instance = next(
                i for i in cluster.instances if i.process is not None and i.process.pid == home
            )
            await cluster.restart(instance)
            # The session is gone with its process. The drain closed its GET
            # stream, and the client, asking, met the 404 and initialized again
            # by itself; a call that meets the 404 first fails, once.
            after: list[int] = []
            try:
                after += await pids_of(legacy, 1)
            except MCPError as error:
                failed = str(error)
            else:
                failed = "Session expired (the client asked first)"
            assert "Session expired" in failed
            after += await pids_of(legacy, 4)
            assert len(set(after)) == 1
            assert home not in after
            transport = legacy.session.transport
            assert transport.reinitializations == 1  # type: ignore[attr-defined]


async def test_a_rolling_restart_loses_no_call_and_no_notification() -> None:
    with trio.fail_after(120):
        figures = await measure(instances=2, duration=8.0, restart=True)
    lines = report(figures, 2, 8.0)
    assert len(figures.restarts) == 2, lines
    assert figures.modern_calls > 0, lines
    assert figures.modern_failed == 0, lines
    assert figures.touches > 0, lines
    assert figures.lost == 0, lines
    assert figures.relistens >= 1, lines  # a drained listen stream was opened again
    assert figures.tasks_unexplained == 0, lines
    assert lines[-1] == f"{figures.modern_calls} calls, 0 failed, 0 notifications lost"
