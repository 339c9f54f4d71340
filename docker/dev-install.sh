#!/usr/bin/env bash
# Install the bind-mounted checkout editable in the tank (the devcontainer's postCreateCommand;
# also by hand: `docker compose exec tank bash docker/dev-install.sh`). Build directories go to
# a container-owned temp folder, not the checkout, so host-built build/ and *.egg-info folders
# never get in the way; compiled extensions land next to their sources as editable installs need
# (overwriting a host-built *.so, which the owner-matched tank user may do).
set -euo pipefail
cd "$(dirname "$0")/.."   # the checkout this script belongs to (/workspace in the tank)
if ! [ -w . ]; then
  echo "Error: $(pwd) (owner uid $(stat -c %u .)) is not writable by the tank's uid $(id -u): set" \
       "PUFFERBOX_UID=$(stat -c %u .) PUFFERBOX_GID=$(stat -c %g .) in .env and rebuild the tank" >&2
  exit 2
fi
build=$(mktemp -d "${TMPDIR:-/tmp}/pufferbox-build.XXXXXX")
trap 'rm -rf "$build"' EXIT
printf '[build]\nbuild_base = %s\n[egg_info]\negg_base = %s\n' "$build" "$build" >"$build/setup.cfg"
targets=(-e .)
for plugin in plugins/*/; do [ -f "$plugin/pyproject.toml" ] && targets+=(-e "$plugin"); done
DIST_EXTRA_CONFIG="$build/setup.cfg" pip install --no-deps --no-build-isolation "$@" "${targets[@]}"
