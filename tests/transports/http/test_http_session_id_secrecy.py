"""The Streamable HTTP client treats the session id as a credential (HT-29, catalogue K-04).

A real client talks to the in-process server over loopback through every path
that logs: calls, a refused POST (HTTP 413), the server ending the session (a
404, then a new session with ``reinitialize=True``) and the DELETE on close.
Every log record of the ``trio_mcp`` loggers, captured at DEBUG, the
transport's ``repr`` and the errors the calls raised must hold none of the
session ids used. (httpx's own ``httpcore`` logger, at DEBUG, does print
response headers, the session id among them: that is outside the library.)
"""

from __future__ import annotations

import logging

import pytest
from http_helpers import make_server, running

from trio_mcp import RPCError, open_http_client
from trio_mcp.transports._http.client._transport import HttpClientTransport


def _record_text(record: logging.LogRecord) -> str:
    """Everything a handler could write for *record*: message, exception, stack."""
    formatter = logging.Formatter()
    parts = [record.getMessage(), repr(record.args)]
    if record.exc_info:
        parts.append(formatter.formatException(record.exc_info))
    if record.stack_info:
        parts.append(formatter.formatStack(record.stack_info))
    return "\n".join(parts)


@pytest.mark.spec("HT-29")
async def test_the_session_id_is_never_in_a_repr_or_a_log_record(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)  # the root: every logger, every level
    ids: list[str] = []
    reprs: list[str] = []
    async with running(make_server(), max_body_size=2000) as (url, app):
        # reconnect_delay: the GET stream the server ends with the session is
        # not reopened during the test, so the next call meets the 404.
        async with open_http_client(
            url + "/mcp", era="legacy", reinitialize=True, reconnect_delay=3600
        ) as client:
            transport = client.session.transport
            assert isinstance(transport, HttpClientTransport)
            assert transport.session_id is not None
            ids.append(transport.session_id)
            reprs += [repr(transport), str(transport), repr(client), repr(client.session)]

            result = await client.call_tool("add", {"a": 1, "b": 2})
            assert result.structured_content == {"result": 3}
            with pytest.raises(RPCError, match="HTTP 413") as refused:
                await client.call_tool("echo", {"text": "x" * 5000})
            reprs += [str(refused.value), repr(refused.value)]

            (server_end,) = app.sessions().values()
            server_end.peer_closed()
            await server_end.wait_closed()
            with pytest.raises(RPCError, match=r"Session expired \(HTTP 404\)") as expired:
                await client.call_tool("add", {"a": 1, "b": 1})
            reprs += [str(expired.value), repr(expired.value)]
            result = await client.call_tool("add", {"a": 2, "b": 2})
            assert result.structured_content == {"result": 4}
            assert transport.reinitializations == 1
            assert transport.session_id is not None
            ids.append(transport.session_id)
            reprs += [repr(transport), str(transport)]
        reprs.append(repr(transport))  # closed
        assert app.session_count == 0  # DELETE was sent, with the id, and logged about

    assert len(set(ids)) == 2
    assert all(len(session_id) >= 16 for session_id in ids)  # long enough not to match by chance
    for text in reprs:
        for session_id in ids:
            assert session_id not in text, text

    ours = [r for r in caplog.records if r.name.startswith("trio_mcp")]
    # The capture works: the new session after the 404 is logged at INFO.
    assert any("started a new session" in r.getMessage() for r in ours)
    leaks = [
        f"{r.name}:{r.levelname}: {r.getMessage()}"
        for r in ours
        if any(session_id in _record_text(r) for session_id in ids)
    ]
    assert leaks == []
