"""Over Streamable HTTP, a request reusing an answered id is answered (reliability C-02).

Before: the session refused it with a null id, which cannot be routed to any
POST, so the POST hung with its stream open (an audit found it; some deployed
clients send id 1 for everything). Now it is served like any other request,
in both response modes, and nothing stays open.
"""

from __future__ import annotations

import orjson
import pytest
import trio
from http_helpers import make_server, open_raw_session, post_headers, raw_client, running


def _call(request_id: int) -> bytes:
    params = {"name": "add", "arguments": {"a": request_id, "b": 1}}
    return orjson.dumps(
        {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    )


def _answer(body: str) -> dict[str, object]:
    if body.startswith("{"):
        return orjson.loads(body)  # type: ignore[no-any-return]
    [data] = [line[len("data: ") :] for line in body.splitlines() if line.startswith("data: ")]
    return orjson.loads(data)  # type: ignore[no-any-return]


@pytest.mark.parametrize("json_response", [False, True])
async def test_reused_ids_are_answered_and_leave_nothing_open(
    json_response: bool, caplog: pytest.LogCaptureFixture
) -> None:
    async with (
        running(make_server(), json_response=json_response) as (url, app),
        raw_client(url) as http,
    ):
        session_id = await open_raw_session(http)  # initialize used id 1
        with trio.fail_after(10):
            for request_id in (2, 2, 1):
                response = await http.post(
                    "/mcp", content=_call(request_id), headers=post_headers(session_id)
                )
                assert response.status_code == 200
                answer = _answer(response.text)
                assert answer["id"] == request_id
                assert answer["result"]["structuredContent"] == {  # type: ignore[index]
                    "result": request_id + 1
                }
        transport = app.sessions()[session_id]
        assert not transport.in_flight(1)
        assert not transport.in_flight(2)
        assert transport.idle  # no response stream left open
    # Logged once per session at WARNING (then at DEBUG).
    warnings = [r for r in caplog.records if "reused request id" in r.getMessage()]
    assert [r.levelname for r in warnings] == ["WARNING"]
