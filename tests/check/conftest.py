"""The checker's tests reuse the interop tests' npm helpers (``tests/interop/``):
their modules are imported by name, as the interop tests themselves do."""

import sys
from pathlib import Path

INTEROP = str(Path(__file__).resolve().parent.parent / "interop")
if INTEROP not in sys.path:
    sys.path.append(INTEROP)
