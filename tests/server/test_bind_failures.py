"""A port that cannot be bound: a plain ``OSError`` from every ``serve_*``,
one line and a non-zero status from the ``run_*`` helpers.

Each test holds a port itself (bound to port 0 on 127.0.0.1, listening), then
asks the server to listen on that same port.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest
import trio

from trio_mcp import Server, serve_http, serve_websocket


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A port of 127.0.0.1 this test holds (listening) until it ends."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        yield held.getsockname()[1]


async def test_serve_http_raises_a_plain_oserror(taken_port: int) -> None:
    with pytest.raises(OSError, match="in use") as raised:
        await serve_http(Server("x"), "127.0.0.1", taken_port)
    assert type(raised.value) is OSError  # itself, not wrapped


async def test_serve_http_under_nursery_start_raises_the_oserror_from_start(
    taken_port: int,
) -> None:
    async with trio.open_nursery() as nursery:
        with pytest.raises(OSError, match="in use"):
            await nursery.start(
                lambda task_status: serve_http(
                    Server("x"), "127.0.0.1", taken_port, task_status=task_status
                )
            )


async def test_serve_http_with_workers_raises_a_plain_oserror(taken_port: int) -> None:
    # The parent binds the shared socket, so no worker is ever started.
    with pytest.raises(OSError, match="in use"):
        await serve_http(
            "trio_mcp.examples.everything:build_server", "127.0.0.1", taken_port, workers=2
        )


async def test_serve_websocket_raises_a_plain_oserror(taken_port: int) -> None:
    with pytest.raises(OSError, match="in use"):
        await serve_websocket(Server("x"), "127.0.0.1", taken_port)


@pytest.mark.parametrize("port", [-1, 65536, 99999])
async def test_a_port_out_of_range_is_a_value_error_naming_it(port: int) -> None:
    with pytest.raises(
        ValueError, match=f"the port must be an integer from 0 to 65535, not {port}"
    ):
        await serve_http(Server("x"), "127.0.0.1", port)
    with pytest.raises(ValueError, match=f"not {port}"):
        await serve_websocket(Server("x"), "127.0.0.1", port)


_RUN = """
import sys
from trio_mcp import Server, run_http
server = Server("x")
port = int(sys.argv[2])
if sys.argv[1] == "function":
    run_http(server, "127.0.0.1", port)
elif sys.argv[1] == "method":
    server.run_http("127.0.0.1", port)
else:
    run_http("trio_mcp.examples.everything:build_server", "127.0.0.1", port, workers=2)
"""


def _run(how: str, port: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _RUN, how, str(port)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize("how", ["function", "method", "workers"])
def test_run_http_prints_one_line_and_exits_non_zero(how: str, taken_port: int) -> None:
    done = _run(how, taken_port)
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr == f"cannot listen on 127.0.0.1:{taken_port}: address already in use\n"


def test_run_http_with_a_port_out_of_range_prints_one_line() -> None:
    done = _run("function", 99999)
    assert done.returncode == 1
    assert done.stderr == (
        "cannot listen on 127.0.0.1:99999: the port must be an integer from 0 to 65535, not 99999\n"
    )
