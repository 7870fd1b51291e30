"""The documentation's OAuth client sample (``docs/samples/oauth_client.py``,
shown in the HTTP deployment guide) runs as written, against a real
authorization server and our resource server on loopback (only the URL and
the user at the browser are the test's)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest
import trio
from oauth_servers import OAuthServer, protected_mcp, running_oauth_server
from test_oauth_cli import Browser, make_server

from trio_mcp.auth import LoopbackRedirect

SAMPLE = Path(__file__).resolve().parents[2] / "docs" / "samples" / "oauth_client.py"


def _example() -> str:
    assert SAMPLE.name == "oauth_client.py"
    return SAMPLE.read_text()


async def test_readme_client_authorization_example_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    block = _example()
    assert block.rstrip().endswith("trio.run(main)")
    async with (
        running_oauth_server(OAuthServer()) as auth_server,
        protected_mcp(make_server(), auth_server) as mcp,
        trio.open_nursery() as nursery,
    ):
        source = block.rstrip().removesuffix("trio.run(main)")
        source = source.replace('URL = "https://mcp.example.com/mcp"', f'URL = "{mcp.url}"')
        namespace: dict[str, Any] = {}
        exec(compile(source, str(SAMPLE), "exec"), namespace)
        browser = Browser(nursery)
        namespace["LoopbackRedirect"] = functools.partial(LoopbackRedirect, show=browser.show)
        await namespace["main"]()
    assert "hello user-1" in capsys.readouterr().out
    assert len(browser.opened) == 1
    assert (tmp_path / "tokens.json").is_file()
