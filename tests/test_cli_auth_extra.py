"""``--auth`` without the ``auth`` extra: one line naming the extra, before any
registration or network call.

The extra's modules are made unimportable in a subprocess by a small wrapper
(``sys.modules[name] = None``, which makes ``import name`` fail as if it were
not installed), which then runs the ``trio-mcp`` entry point. The URL points
at a socket this test holds listening: that no connection ever reached it
proves nothing was sent, and the empty config directory that no client was
registered.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

WRAPPER = """
import sys
sys.modules["authlib"] = None
sys.modules["joserfc"] = None
from trio_mcp._cli._main import main
sys.exit(main(sys.argv[1:]))
"""

MESSAGE = (
    "trio-mcp: error: --auth needs the auth extra (authlib and joserfc not installed): "
    "pip install 'trio-mcp[auth]'\n"
)


@pytest.fixture
def held() -> Iterator[socket.socket]:
    """A listening socket on 127.0.0.1 that never answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        sock.setblocking(False)
        yield sock


@pytest.mark.parametrize(
    "command",
    [
        ["call", "--url", "{url}", "--auth", "--", "tool", "{{}}"],
        ["trace", "--url", "{url}", "--auth"],
    ],
)
def test_auth_without_the_extra_is_one_line_before_any_network_call(
    command: list[str], held: socket.socket, tmp_path: Path
) -> None:
    url = f"http://127.0.0.1:{held.getsockname()[1]}/mcp"
    config = tmp_path / "config"
    done = subprocess.run(
        [sys.executable, "-c", WRAPPER, *(part.format(url=url) for part in command)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"PATH": "/usr/bin:/bin", "XDG_CONFIG_HOME": str(config), "HOME": str(tmp_path)},
    )
    assert done.stderr == MESSAGE
    assert done.returncode == 1
    with pytest.raises(BlockingIOError):
        held.accept()  # nobody connected
    assert not config.exists()  # no client registered, no token stored


def test_the_check_names_only_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    from trio_mcp._cli._auth import require_auth_extra
    from trio_mcp._cli._errors import CommandError

    require_auth_extra()  # the test environment has the extra
    monkeypatch.setitem(sys.modules, "joserfc", None)
    with pytest.raises(
        CommandError, match=r"^--auth needs the auth extra \(joserfc not installed\)"
    ):
        require_auth_extra()
