#!/usr/bin/env bash
# Runs a command with a private, empty /tmp (a new tmpfs in its own mount namespace; needs root).
#
#   ci/private-tmp.sh KEEP_DIR... -- COMMAND [ARGS...]
#
# Each KEEP_DIR (the clone under test, the fresh HOME/TMPDIR) stays visible at its own path even
# where it lies under /tmp; nothing else of the machine's /tmp does, so state an earlier run left
# there (a peer venv under /tmp/pufferbox-peers, Ray's /tmp/ray) cannot reach the command.
set -euo pipefail
keep=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do keep+=("$(cd "$1" && pwd -P)"); shift; done
[ "${1:-}" = -- ] && [ $# -ge 2 ] || { echo "usage: ci/private-tmp.sh KEEP_DIR... -- COMMAND [ARGS...]" >&2; exit 2; }
shift
if ! unshare --mount true 2>/dev/null; then
  echo "Error: ci/private-tmp.sh needs root to give the command a private /tmp (unshare --mount failed); run it as root" >&2
  exit 2
fi
exec unshare --mount --propagation private bash -euo pipefail -c '
  n=$1; shift
  keep=("${@:1:$n}"); shift "$n"
  # hold each kept dir open, cover /tmp, then bind each back at its old path from the open fd
  # (--no-canonicalize: mount must not turn the fd link back into the path string, which now
  # names the empty tmpfs)
  fds=()
  for dir in "${keep[@]}"; do exec {fd}<"$dir"; fds+=("$fd"); done
  mount -t tmpfs -o mode=1777 pbci-tmp /tmp
  for i in "${!keep[@]}"; do
    dir=${keep[$i]}
    if [ ! -d "$dir" ]; then mkdir -p "$dir" && mount --no-canonicalize --bind "/proc/self/fd/${fds[$i]}" "$dir"; fi
  done
  for fd in "${fds[@]}"; do exec {fd}<&-; done
  cd "$PWD"
  exec "$@"
' private-tmp "${#keep[@]}" "${keep[@]}" "$@"
