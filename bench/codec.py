"""Codec benchmark: which JSON library trio_mcp's codec uses.

Times encode and decode of typical MCP frames (a tools/call request, a small
result, a 64 KiB result, a tools/list result with 50 tools) with the standard
library's json (strict: allow_nan=False) and with orjson, in one run. The codec
(src/trio_mcp/protocol/_codec.py) uses the faster one; this script is the evidence.

Run: .venv/bin/python bench/codec.py [--seconds 0.3]
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

import orjson

FRAMES: dict[str, dict[str, Any]] = {
    "tools/call request": {
        "jsonrpc": "2.0",
        "id": 42,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "hello"}, "_meta": {"progressToken": 42}},
    },
    "small result": {
        "jsonrpc": "2.0",
        "id": 42,
        "result": {"content": [{"type": "text", "text": "hello"}], "isError": False},
    },
    "64 KiB result": {
        "jsonrpc": "2.0",
        "id": 43,
        "result": {"content": [{"type": "text", "text": "x" * 65536}]},
    },
    "tools/list, 50 tools": {
        "jsonrpc": "2.0",
        "id": 2,
        "result": {
            "tools": [
                {
                    "name": f"tool_{i}",
                    "description": "Does a thing. " * 5,
                    "inputSchema": {
                        "type": "object",
                        "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
                        "required": ["a"],
                    },
                }
                for i in range(50)
            ]
        },
    },
}


def _rate(fn: Callable[[], object], seconds: float) -> float:
    count = 0
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        for _ in range(100):
            fn()
        count += 100
    return count / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=0.3, help="time per measurement")
    args = parser.parse_args()
    print(f"{'frame':<22} {'op':<7} {'json ops/s':>12} {'orjson ops/s':>13} {'ratio':>6}")
    for name, frame in FRAMES.items():
        text = json.dumps(frame, allow_nan=False, separators=(",", ":")).encode()
        cases = {
            "encode": (
                lambda f=frame: json.dumps(f, allow_nan=False, separators=(",", ":")).encode(),
                lambda f=frame: orjson.dumps(f),
            ),
            "decode": (lambda t=text: json.loads(t), lambda t=text: orjson.loads(t)),
        }
        for op, (std, fast) in cases.items():
            a, b = _rate(std, args.seconds), _rate(fast, args.seconds)
            print(f"{name:<22} {op:<7} {a:>12,.0f} {b:>13,.0f} {b / a:>5.1f}x")


if __name__ == "__main__":
    main()
