# Sourced by scripts/test: the task store's tests start a real redis-server
# (the binary only, on a unix socket in a temporary directory; the system
# service is never used). On a fresh Debian machine it is installed here, as
# the virtualenv is; without root the tests that need it fail saying how to
# install it (or are skipped with TRIO_MCP_SKIP_REDIS=1).
if [ "${TRIO_MCP_SKIP_REDIS:-}" != "1" ]; then
  . "$(dirname "${BASH_SOURCE[0]}")/_apt.sh" redis-server redis-server
fi
