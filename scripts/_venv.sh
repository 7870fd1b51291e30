# Sourced by the other scripts: make sure .venv exists and holds the project
# with the given extras, reinstalling only when pyproject.toml changed.
# Usage: . scripts/_venv.sh EXTRAS   (e.g. "dev" or "")
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${TRIO_MCP_PYTHON:-}"
if [ -z "$PY" ]; then
  for candidate in python3.13 python3.12 python3.11 python3; do
    if command -v "$candidate" >/dev/null 2>&1 &&
       "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
      PY="$candidate"; break
    fi
  done
fi
[ -n "$PY" ] || { echo "trio_mcp needs Python 3.11 or newer" >&2; exit 1; }
VENV="$ROOT/.venv"
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
extras="${1:-}"
spec="$ROOT"; [ -n "$extras" ] && spec="$ROOT[$extras]"
stamp="$VENV/.installed-${extras:-base}"
want="$(cat "$ROOT/pyproject.toml" | sha256sum | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  log="$VENV/install.log"
  echo "setting up $VENV (${extras:-base}) ..." >&2
  if ! "$VENV/bin/python" -m pip install --disable-pip-version-check -e "$spec" > "$log" 2>&1; then
    tail -n 40 "$log" >&2
    echo "pip install failed; full log: $log" >&2
    exit 1
  fi
  echo "$want" > "$stamp"
fi
