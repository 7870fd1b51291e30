"""A complete stdio server: a tool with structured output, a resource template, a prompt."""

import attrs

from trio_mcp import Context, Server, ToolError, run_stdio

server = Server("notes", "1.0")
notes = {"welcome": "Hello!"}


@attrs.frozen
class Saved:
    name: str
    size: int


@server.tool()
async def save(ctx: Context, name: str, text: str) -> Saved:
    """Save a note (structured output: Saved)."""
    if not name.isidentifier():
        raise ToolError(f"bad name {name!r}")  # an isError result
    notes[name] = text
    await ctx.info({"saved": name})  # notifications/message
    server.resource_updated(f"note://{name}")  # to subscribed sessions
    return Saved(name, len(text))


@server.resource_template("note://{name}")
async def note(name: str) -> str:
    return notes[name]  # KeyError -> -32002


@server.prompt()
async def summarise(name: str) -> str:
    return f"Summarise this note:\n{notes.get(name, '')}"


run_stdio(server)
