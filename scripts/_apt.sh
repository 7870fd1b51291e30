# Sourced by scripts that need a program from a Debian package:
# . scripts/_apt.sh PROGRAM PACKAGE. Installs PACKAGE when PROGRAM is missing
# and we run as root with apt-get (a fresh CI machine); otherwise says how.
_need_program="$1"; _need_package="$2"
if ! command -v "$_need_program" >/dev/null; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
    echo "installing $_need_package (Debian's package) for $_need_program" >&2
    # Another script may be installing at the same moment (tests and the
    # docs build set up in parallel): wait for dpkg's lock instead of failing.
    apt-get -o DPkg::Lock::Timeout=600 update -qq \
      && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq "$_need_package" >&2
  else
    echo "$_need_program is missing: apt-get install $_need_package" >&2
  fi
fi
