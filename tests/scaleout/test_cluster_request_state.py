"""``requestState`` across instances behind a real HAProxy, with a real
redis-server: 2026-07-28 input-required calls in flight while the key ring
rotates (the instances restarted one after another with the ring of
``TRIO_MCP_REQUEST_STATE_KEY`` and ``TRIO_MCP_REQUEST_STATE_PREVIOUS_KEYS``)
all complete, and a ``single_use`` state answered on one instance is refused
on the other (``RedisNonceStore``).

Real clock and real processes; the waits are HAProxy's own health checks
(``Cluster.wait_up``) and the instances' drains. The client holds each call
between its rounds (its elicitation handler waits for the rotation to reach a
given step), so the states are in flight in the client, sealed by one ring and
opened by another.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
import trio
from cluster import KEY, Cluster, Instance

from trio_mcp import FormElicitation, RPCError, open_http_client
from trio_mcp import types as t

PREVIOUS_KEYS_ENV = "TRIO_MCP_REQUEST_STATE_PREVIOUS_KEYS"
OLD = KEY
NEW = "cluster-key-fedcba9876543210"
#: Calls in flight through the rotation.
CALLS = 6
#: The questions of each call answered at once, while the instances disagree
#: on the current key: their rounds bounce between the instances.
MIXED = 6


def pid_of(instance: Instance) -> int:
    assert instance.process is not None
    return instance.process.pid


async def test_calls_in_flight_complete_while_the_key_ring_rotates(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path, 2, grace=5.0)
    first, second = cluster.instances
    # The rotation's steps done so far; question q waits for step WAITS[q].
    step = 0
    stepped = trio.Event()
    questions = 1 + 1 + MIXED + 1
    waits = [1, 2] + [2] * MIXED + [3]
    asked = 0
    asked_more = trio.Event()

    async def answer(request: FormElicitation) -> t.ElicitResult:
        nonlocal asked, asked_more
        question = int(request.message.split()[1])
        asked += 1
        asked_more.set()
        asked_more = trio.Event()
        while step < waits[question]:
            await stepped.wait()
        return t.ElicitResult(action="accept", content={"ok": True})

    async def asked_at_least(count: int) -> None:
        while asked < count:
            await asked_more.wait()

    def next_step() -> None:
        nonlocal step, stepped
        step += 1
        stepped.set()
        stepped = trio.Event()

    async def restart(instance: Instance, key: str, previous: str) -> int:
        instance.env = {"TRIO_MCP_REQUEST_STATE_KEY": key, PREVIOUS_KEYS_ENV: previous}
        await cluster.restart(instance)
        return pid_of(instance)

    results: list[list[int]] = []

    async def call(client: Any) -> None:
        result = await client.call_tool("survey", {"questions": questions})
        results.append(result.structured_content["result"])

    with trio.fail_after(120):
        async with (
            cluster.running(),
            open_http_client(
                cluster.url,
                era="modern",
                remember_era=False,
                elicitation=answer,
                max_input_rounds=questions + 1,
            ) as client,
            trio.open_nursery() as nursery,
        ):
            before = {pid_of(first), pid_of(second)}
            for _ in range(CALLS):
                nursery.start_soon(call, client)
            # Every call has its first state, sealed with OLD.
            await asked_at_least(CALLS)
            # Step 1: every instance accepts NEW (and still signs with OLD).
            await restart(first, OLD, NEW)
            await restart(second, OLD, NEW)
            next_step()
            # Step 2, half done: the first signs with NEW, the second with OLD;
            # each accepts both. The states sealed in step 1 are opened, and
            # the mixed rounds go back and forth between the two.
            signs_new = await restart(first, NEW, OLD)
            signs_old = pid_of(second)
            next_step()
            await asked_at_least(CALLS * questions)
            # Step 2 done: every instance signs with NEW and accepts OLD.
            await restart(second, NEW, OLD)
            next_step()
    # Every call completed: one pid per round, none from before step 2.
    assert len(results) == CALLS
    assert all(len(pids) == questions + 1 for pids in results)
    mixed = [pids[2 : 2 + MIXED + 1] for pids in results]
    assert {pid for pids in mixed for pid in pids} == {signs_new, signs_old}
    # A state sealed with NEW was opened where OLD is the current key, and the
    # other way round.
    pairs = {pair for pids in mixed for pair in itertools.pairwise(pids)}
    assert (signs_new, signs_old) in pairs
    assert (signs_old, signs_new) in pairs
    assert not before & {pid for pids in results for pid in pids[2:]}


async def test_a_single_use_state_answered_on_one_instance_is_refused_on_the_other(
    tmp_path: Path,
) -> None:
    cluster = Cluster(tmp_path, 2, grace=5.0)
    first, second = cluster.instances

    async def accept(request: FormElicitation) -> t.ElicitResult:
        raise AssertionError("the test answers the rounds itself")  # pragma: no cover

    with trio.fail_after(60):
        async with (
            cluster.running(),
            open_http_client(
                cluster.instance_url(first), era="modern", remember_era=False, elicitation=accept
            ) as here,
            open_http_client(
                cluster.instance_url(second), era="modern", remember_era=False, elicitation=accept
            ) as there,
        ):
            params = {"name": "survey", "arguments": {"questions": 1}}
            asked = await here.call("tools/call", params)
            assert isinstance(asked, t.InputRequiredResult)
            assert asked.input_requests is not None
            (key,) = asked.input_requests
            retry = {
                **params,
                "inputResponses": {key: {"action": "accept", "content": {"ok": True}}},
                "requestState": asked.request_state,
            }
            # Sealed on the first instance, answered on the second.
            done = await there.call("tools/call", retry)
            assert done.structured_content == {"result": [pid_of(first), pid_of(second)]}
            # Replayed on either: refused, with the documented error.
            for client in (here, there):
                with pytest.raises(RPCError) as refused:
                    await client.call("tools/call", retry)
                assert refused.value.code == -32602
                assert refused.value.message == "Invalid requestState: it has already been used"
                assert refused.value.data == {"reason": "replayed"}
