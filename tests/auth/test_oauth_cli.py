"""``trio-mcp call/trace --url URL --auth``: the browser flow through the
loopback redirect listener, tokens kept in the user's config directory
(mode 0600) and reused on the next run without a browser."""

from __future__ import annotations

import io
import os
import stat
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
import trio
from oauth_servers import OAuthServer, protected_mcp, running_oauth_server

from trio_mcp import Context, Server
from trio_mcp._cli import _auth
from trio_mcp._cli._call import run_call
from trio_mcp._cli._main import main
from trio_mcp._cli._trace import run_trace


def make_server() -> Server:
    server = Server("cli-oauth")

    @server.tool()
    async def whoami(ctx: Context) -> str:
        assert ctx.auth is not None
        return f"hello {ctx.auth.subject}"

    return server


class Browser:
    """Plays the user: opens each URL the CLI prints (the authorization server
    approves at once) and follows the redirect back to the loopback listener."""

    def __init__(self, nursery: trio.Nursery) -> None:
        self.nursery = nursery
        self.opened: list[str] = []

    def show(self, url: str) -> None:
        self.opened.append(url)
        self.nursery.start_soon(self._visit, url)

    async def _visit(self, url: str) -> None:
        async with httpx.AsyncClient(follow_redirects=False) as http:
            approved = await http.get(url)
            assert approved.status_code == 302
            back = await http.get(approved.headers["location"])
            assert back.status_code == 200


@pytest.mark.spec("AU-14")
async def test_call_and_trace_with_auth_open_one_url_then_reuse_the_tokens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    async with (
        running_oauth_server(OAuthServer()) as auth_server,
        protected_mcp(make_server(), auth_server) as mcp,
        trio.open_nursery() as nursery,
    ):
        browser = Browser(nursery)
        monkeypatch.setattr(_auth, "_show", browser.show)
        out, err = io.StringIO(), io.StringIO()
        status = await run_call(
            [], "whoami", {}, url=mcp.url, auth=True, out=out, err=err, handle_signals=False
        )
        assert status == 0, err.getvalue()
        assert "hello user-1" in out.getvalue()
        (opened,) = browser.opened
        query = parse_qs(urlsplit(opened).query)
        redirect_uri = query["redirect_uri"][0]
        assert redirect_uri.startswith("http://127.0.0.1:")
        assert query["code_challenge_method"] == ["S256"]
        path = tmp_path / "trio-mcp" / "tokens.json"
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        assert auth_server.issued[0] in path.read_text()
        # The next run (a trace) finds the tokens: no browser, no authorization.
        traced = io.StringIO()
        assert await run_trace([], url=mcp.url, auth=True, out=traced, err=err) == 0
        assert "connecting to" in traced.getvalue()
        assert len(browser.opened) == 1
        assert len(auth_server.requests("/authorize")) == 1


def test_auth_needs_url(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["call", "--auth", "--", "python", "x.py", "tool", "{}"])
    assert caught.value.code == 2
    assert "--auth needs --url" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["call", "--url", "http://127.0.0.1:1/mcp", "--", "python", "tool", "{}"])
    assert "call --url needs: -- TOOL JSON" in capsys.readouterr().err


def test_the_token_file_lives_in_the_config_directory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", "/somewhere")
    assert _auth.token_path() == Path("/somewhere/trio-mcp/tokens.json")
    monkeypatch.delenv("XDG_CONFIG_HOME")
    assert _auth.token_path() == Path.home() / ".config" / "trio-mcp" / "tokens.json"
