# Sourced by scripts/test: the task store's tests start a real redis-server
# (the binary only, on a unix socket in a temporary directory; the system
# service is never used). On a fresh Debian machine it is installed here, as
# the virtualenv is; without root the tests that need it fail saying how to
# install it (or are skipped with TRIO_MCP_SKIP_REDIS=1).
if ! command -v redis-server >/dev/null && [ "${TRIO_MCP_SKIP_REDIS:-}" != "1" ]; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
    echo "scripts/test: installing redis-server (Debian's package) for the task store tests" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >&2
  else
    echo "scripts/test: redis-server is missing: apt-get install redis-server" >&2
  fi
fi
