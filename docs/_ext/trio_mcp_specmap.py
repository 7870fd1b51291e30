"""The spec map: ``spec_notes/*.md`` rendered as pages whose ids link to code and tests.

At ``config-inited`` this extension

* writes each note as a page under ``docs/_generated/spec/``: the prose as it
  is, and each requirement table (``| ID | Rev | Kw | Status | Requirement |
  Code | Tests |``) as an HTML table in which every row has the anchor of its id
  (``spec/cancellation.html#CN-05``), every code symbol links to the line that
  defines it and every test to its ``def``;
* renders, with Pygments, every source and test file those rows name as an HTML
  page with one anchor per line (``_source/src/trio_mcp/protocol/_connection.py.html#L-120``),
  copied into the site through ``html_extra_path``.

The note files stay the single source (``tests/test_spec_notes.py`` guards
them); nothing here is written by hand.
"""

from __future__ import annotations

import html
import importlib
import inspect
import re
import shutil
from functools import cache
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.config import Config

_ROW = re.compile(r"^\|\s*([A-Z]+-\d+|§\d+(?:\.\d+)?-\d+)\s*\|(.*)\|\s*$")
_HEADER = re.compile(r"^\|\s*ID\s*\|")
_TICKED = re.compile(r"`([^`]+)`")
_BOLD = re.compile(r"\*\*([^*]+)\*\*")
_COLUMNS = ("ID", "Rev", "Kw", "Status", "Requirement", "Code", "Tests")


def _inline(text: str) -> str:
    """Markdown inline code and bold as HTML, everything else escaped."""
    parts = re.split(r"(`[^`]+`)", text)
    out = []
    for part in parts:
        if part.startswith("`") and part.endswith("`") and len(part) > 1:
            out.append(f"<code>{html.escape(part[1:-1])}</code>")
        else:
            out.append(_BOLD.sub(r"<strong>\1</strong>", html.escape(part)))
    return "".join(out)


class SourceIndex:
    """Finds where a symbol or a test is defined, and remembers the files to render."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.files: set[Path] = set()

    def link(self, path: Path, line: int) -> str:
        self.files.add(path)
        return f"../../_source/{path.relative_to(self.root).as_posix()}.html#L-{line}"

    def symbol(self, dotted: str) -> tuple[Path, int] | None:
        return _find_symbol(self.root, dotted)

    def test(self, node_id: str) -> tuple[Path, int] | None:
        file, _, rest = node_id.partition("::")
        path = self.root / file
        if not path.is_file():
            return None
        if not rest:
            return path, 1
        name = rest.split("::")[-1].split("[")[0]
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            if re.match(
                rf"\s*(async\s+)?def\s+{re.escape(name)}\b|\s*class\s+{re.escape(name)}\b", line
            ):
                return path, number
        return path, 1


@cache
def _find_symbol(root: Path, dotted: str) -> tuple[Path, int] | None:
    parts = dotted.split(".")
    for split in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        module = obj
        rest = parts[split:]
        try:
            for name in rest:
                obj = getattr(obj, name)
        except AttributeError:
            obj = None
        found = _source_of(obj) if obj is not None else None
        if found is None:
            found = _grep_module(module, rest[-1] if rest else None)
        if found is not None and found[0].resolve().is_relative_to(root):
            return found[0].resolve(), found[1]
        return None
    return None


def _source_of(obj: Any) -> tuple[Path, int] | None:
    target = inspect.unwrap(obj.fget if isinstance(obj, property) else obj)
    try:
        file = inspect.getsourcefile(target)
        _, line = inspect.getsourcelines(target)
    except (TypeError, OSError):
        return None
    if file is None:
        return None
    return Path(file), max(line, 1)


def _grep_module(module: Any, name: str | None) -> tuple[Path, int] | None:
    file = getattr(module, "__file__", None)
    if file is None:
        return None
    path = Path(file)
    if name is None:
        return path, 1
    pattern = re.compile(
        rf"^\s*({re.escape(name)}\s*[:=]|(async\s+)?def\s+{re.escape(name)}\b|class\s+{re.escape(name)}\b)"
    )
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if pattern.match(line):
            return path, number
    # A name re-exported by a package: follow it to where it was defined.
    obj = getattr(module, name, None)
    return _source_of(obj) if obj is not None else None


def _linked(cell: str, find: Any, index: SourceIndex) -> str:
    items = _TICKED.findall(cell)
    if not items:
        return _inline(cell)
    rendered = []
    for item in items:
        found = find(item)
        code = f"<code>{html.escape(item)}</code>"
        rendered.append(f'<a href="{index.link(*found)}">{code}</a>' if found else code)
    return "<br>".join(rendered)


def _table(rows: list[str], index: SourceIndex) -> str:
    out = ['<table class="specmap">', "<thead><tr>"]
    out += [f"<th>{name}</th>" for name in _COLUMNS]
    out.append("</tr></thead><tbody>")
    for line in rows:
        match = _ROW.match(line)
        if match is None:
            continue
        rid = match.group(1)
        cells = [cell.strip() for cell in match.group(2).split("|")]
        rev, kw, status, requirement, code, tests = cells
        out.append(
            f'<tr id="{html.escape(rid)}"><td><a href="#{html.escape(rid)}">'
            f"<strong>{html.escape(rid)}</strong></a></td>"
            f"<td>{_inline(rev)}</td><td>{_inline(kw)}</td><td>{_inline(status)}</td>"
            f"<td>{_inline(requirement)}</td>"
            f"<td>{_linked(code, index.symbol, index)}</td>"
            f"<td>{_linked(tests, index.test, index)}</td></tr>"
        )
    out.append("</tbody></table>")
    return "\n".join(out)


def render_note(text: str, index: SourceIndex) -> str:
    """One note as MyST: its prose kept, its requirement tables as linked HTML."""
    out: list[str] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if _HEADER.match(lines[i]):
            i += 2  # the header and its |---| line
            rows = []
            while i < len(lines) and lines[i].startswith("|"):
                rows.append(lines[i])
                i += 1
            out += ["```{raw} html", _table(rows, index), "```"]
            continue
        out.append(lines[i])
        i += 1
    return "\n".join(out) + "\n"


def _render_sources(index: SourceIndex, target: Path) -> None:
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonLexer

    formatter = HtmlFormatter(linenos="table", lineanchors="L", anchorlinenos=True, wrapcode=True)
    style = formatter.get_style_defs(".highlight")
    for path in sorted(index.files):
        relative = path.relative_to(index.root).as_posix()
        page = target / "_source" / f"{relative}.html"
        page.parent.mkdir(parents=True, exist_ok=True)
        body = highlight(path.read_text(), PythonLexer(), formatter)
        page.write_text(
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f"<title>{html.escape(relative)}</title><style>{style}\n"
            "body{font-family:monospace;margin:1em} :target{background:#fff6bf}</style>"
            f"</head><body><h1>{html.escape(relative)}</h1>{body}</body></html>\n"
        )


def generate(root: Path, docs: Path) -> list[str]:
    """Write the spec pages and the source pages; the names of the notes."""
    notes = sorted((root / "spec_notes").glob("*.md"))
    out = docs / "_generated" / "spec"
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    index = SourceIndex(root)
    names = []
    for note in notes:
        name = "index-of-notes" if note.stem == "README" else note.stem
        (out / f"{name}.md").write_text(render_note(note.read_text(), index))
        names.append(name)
    extra = docs / "_build" / "extra"
    if extra.exists():
        shutil.rmtree(extra)
    _render_sources(index, extra)
    return names


def spec_pages(root: Path) -> dict[str, str]:
    """Each requirement id and the spec-map page that lists it."""
    pages: dict[str, str] = {}
    for note in sorted((root / "spec_notes").glob("*.md")):
        name = "index-of-notes" if note.stem == "README" else note.stem
        for line in note.read_text().splitlines():
            match = _ROW.match(line)
            if match:
                pages.setdefault(match.group(1), name)
    return pages


_SPEC_ID = re.compile(r"\b[A-Z]{1,4}-\d{2}\b")


def link_spec_ids(lines: list[str], known: Any) -> list[str]:
    """The docstring *lines* with each id of its ``Spec: TL-06, TO-01..TO-05.``
    paragraph (one line, or wrapped over several) that the spec map *known*
    lists made a ``:spec:`` link to its row; ids anywhere else are left alone."""
    out = []
    in_spec = False
    for line in lines:
        if line.lstrip().startswith("Spec:"):
            in_spec = True
        elif not line.strip():
            in_spec = False
        if in_spec:
            line = _SPEC_ID.sub(
                lambda m: f":spec:`{m.group(0)}`" if m.group(0) in known else m.group(0), line
            )
        out.append(line)
    return out


def _link_spec_lines(
    app: Sphinx, what: str, name: str, obj: Any, options: Any, lines: list[str]
) -> None:
    """autodoc's hook: the docstring's Spec: paragraph linked, in place."""
    lines[:] = link_spec_ids(lines, app.env.trio_mcp_spec_pages)  # type: ignore[attr-defined]


def spec_role(
    name: str,
    rawtext: str,
    text: str,
    lineno: int,
    inliner: Any,
    options: Any = None,
    content: Any = None,
) -> tuple[list[nodes.Node], list[nodes.system_message]]:
    """``:spec:`CN-05```: a link to the row of the spec map that lists the id."""
    env = inliner.document.settings.env
    page = env.trio_mcp_spec_pages.get(text)
    if page is None:
        message = inliner.reporter.error(f"no spec map row has the id {text!r}", line=lineno)
        return [inliner.problematic(rawtext, rawtext, message)], [message]
    up = "../" * env.docname.count("/")
    node = nodes.reference(rawtext, text, refuri=f"{up}_generated/spec/{page}.html#{text}")
    return [node], []


def _on_config(app: Sphinx, config: Config) -> None:
    docs = Path(app.confdir)
    generate(docs.parent, docs)
    config.html_extra_path = [*config.html_extra_path, "_build/extra"]


def _on_env(app: Sphinx, env: Any, *args: Any) -> None:
    env.trio_mcp_spec_pages = spec_pages(Path(app.confdir).parent)


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("config-inited", _on_config)
    app.connect("env-before-read-docs", _on_env)
    app.connect("autodoc-process-docstring", _link_spec_lines)
    app.add_role("spec", spec_role)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
