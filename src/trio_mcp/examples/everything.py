"""A server that exercises every server feature of trio_mcp.

Run it over stdio (``python -m trio_mcp.examples.everything``, or with
``--http HOST:PORT`` for Streamable HTTP at ``/mcp``) and point any MCP client
at it, or watch it with ``trio-mcp trace -- python -m trio_mcp.examples.everything``;
the tests in ``tests/server/`` drive it in memory, over stdio, and with the
official Python SDK's client.

Features: tools (plain, structured output, annotations, errors, a sync tool in
a worker thread, progress, logging, images), static resources (text and
binary), a resource template, subscriptions, prompts with required and
optional arguments, completions for both, and pagination (page size 3).
"""

from __future__ import annotations

import enum
import sys
from collections.abc import Sequence
from typing import Literal, TypedDict

import attrs
import trio

from trio_mcp import Context, Server, ToolError, parse_http_option
from trio_mcp import types as t

# A 1x1 transparent PNG.
PIXEL = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)

COLOURS = ["red", "green", "blue", "black", "white", "yellow"]
LANGUAGES = ["english", "french", "german", "spanish", "swedish"]


class Unit(enum.Enum):
    CELSIUS = "celsius"
    FAHRENHEIT = "fahrenheit"


@attrs.frozen
class Weather:
    city: str
    temperature: float
    unit: Unit
    conditions: list[str]


class Stats(TypedDict):
    count: int
    mean: float


def build_server(page_size: int | None = 3) -> Server:
    """The 'everything' server (a fresh one per call, so tests do not share state)."""
    server = Server(
        "everything",
        "1.0",
        instructions="A server that exercises every feature.",
        page_size=page_size,
    )
    notes: dict[str, str] = {"welcome": "Hello from trio_mcp."}

    # ------------------------------------------------------------- tools

    @server.tool(annotations=t.ToolAnnotations(read_only_hint=True, idempotent_hint=True))
    async def echo(text: str) -> str:
        """Echo the text back.

        Args:
            text: what to echo.
        """
        return text

    @server.tool(title="Add two numbers")
    async def add(a: int, b: int) -> int:
        """Add two integers (structured output: {"result": a + b})."""
        return a + b

    @server.tool()
    async def weather(city: str, unit: Unit = Unit.CELSIUS) -> Weather:
        """Made-up weather for a city.

        Args:
            city: the city name.
            unit: celsius or fahrenheit.
        """
        celsius = 10.0 + len(city)
        value = celsius if unit is Unit.CELSIUS else celsius * 9 / 5 + 32
        return Weather(city=city, temperature=value, unit=unit, conditions=["cloudy", "mild"])

    @server.tool()
    async def stats(values: list[float]) -> Stats:
        """Count and mean of a list of numbers."""
        if not values:
            raise ToolError("values must not be empty")
        return Stats(count=len(values), mean=sum(values) / len(values))

    @server.tool()
    async def book(
        name: str,
        seats: int,
        seat_class: Literal["economy", "business"] = "economy",
        window: bool = False,
        note: str | None = None,
    ) -> str:
        """Book seats (five arguments of five kinds)."""
        return f"{seats} {seat_class} seat(s) for {name}, window={window}, note={note}"

    @server.tool()
    def checksum(data: str) -> str:
        """A sync function: runs in a worker thread, abandoned on cancel."""
        total = 0
        for char in data:
            total = (total * 31 + ord(char)) % 1_000_003
        return str(total)

    @server.tool()
    async def slow(ctx: Context, steps: int = 3) -> str:
        """Report progress, log each step, then finish."""
        for step in range(1, steps + 1):
            await trio.sleep(0.01)
            await ctx.report_progress(step, total=steps, message=f"step {step}")
            await ctx.info({"step": step, "of": steps}, logger="everything.slow")
        return f"done in {steps} steps"

    @server.tool()
    async def pixel() -> list[t.ImageContent | t.TextContent]:
        """An image and a caption."""
        return [t.ImageContent.from_bytes(PIXEL, "image/png"), t.TextContent(text="1x1 pixel")]

    @server.tool()
    async def fail(kind: Literal["tool", "crash"]) -> str:
        """Fail on purpose: a ToolError, or an unexpected exception."""
        if kind == "tool":
            raise ToolError("failed on purpose")
        raise RuntimeError("secret internal detail")

    @server.tool()
    async def set_note(name: str, text: str) -> str:
        """Create or change the note ``note://<name>`` (subscribers are notified)."""
        notes[name] = text
        server.resource_updated(f"note://{name}")
        return f"note {name} saved"

    # --------------------------------------------------------- resources

    @server.resource("config://app", mime_type="application/json", title="App config")
    async def config() -> str:
        """The application's configuration."""
        return '{"theme": "dark"}'

    @server.resource("image://pixel", mime_type="image/png")
    async def pixel_resource() -> bytes:
        """A binary resource (sent base64)."""
        return PIXEL

    @server.resource_template("note://{name}", mime_type="text/plain")
    async def note(name: str) -> str:
        """A note by name."""
        return notes[name]  # KeyError -> -32002 Resource not found

    @server.resource_template("colour://{colour}/{shade}")
    async def colour(colour: str, shade: str) -> str:
        """A colour and shade."""
        return f"{shade} {colour}"

    @server.completion(template="colour://{colour}/{shade}", argument="colour")
    def complete_colour(value: str) -> list[str]:
        return [c for c in COLOURS if c.startswith(value)]

    # ----------------------------------------------------------- prompts

    @server.prompt(title="Greeting")
    async def greet(name: str, language: str = "english") -> str:
        """Greet someone.

        Args:
            name: who to greet.
            language: which language.
        """
        return f"Greet {name} in {language}."

    @server.prompt()
    async def review(code: str) -> list[t.PromptMessage]:
        """A code review conversation."""
        return [
            t.PromptMessage(role="user", content=t.TextContent(text=f"Review:\n{code}")),
            t.PromptMessage(role="assistant", content=t.TextContent(text="Looking at it.")),
        ]

    @server.completion(prompt="greet", argument="language")
    async def complete_language(value: str, arguments: dict[str, str]) -> list[str]:
        return [lang for lang in LANGUAGES if lang.startswith(value)]

    return server


def main(argv: Sequence[str] | None = None) -> None:
    """Serve a fresh 'everything' server over stdio, or over Streamable HTTP at
    ``/mcp`` with ``--http HOST:PORT`` (*argv* defaults to the command line).

    Returns on stdin EOF, SIGTERM or Ctrl+C (stdio), on Ctrl+C (HTTP).
    """
    _, http = parse_http_option(sys.argv[1:] if argv is None else argv)
    if http:
        build_server().run_http(*http)
    else:
        build_server().run_stdio()


if __name__ == "__main__":
    main()
