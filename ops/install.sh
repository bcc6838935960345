#!/bin/sh
# Installs the svc CLI with npm into $SVC_HOME/cli and links it as $SVC_BIN_DIR/svc.
# `svc update` re-runs this script (the copy kept at $SVC_HOME/install.sh);
# `svc uninstall` removes what it installed (recorded in $SVC_HOME/install.json).
#
#   sh install.sh                          # the package from the npm registry
#   SVC_PACKAGE=./svc-0.1.0.tgz sh install.sh   # any npm spec: name@version, tarball, git URL
#
# Variables: SVC_PACKAGE (default svc@latest), SVC_HOME (default ~/.svc),
# SVC_BIN_DIR (default /usr/local/bin; the shim is skipped when it is not writable).
set -eu

SVC_HOME=${SVC_HOME:-"$HOME/.svc"}
SVC_PACKAGE=${SVC_PACKAGE:-svc@latest}
SVC_BIN_DIR=${SVC_BIN_DIR:-/usr/local/bin}
prefix="$SVC_HOME/cli"

fail() { echo "error: $*" >&2; exit 1; }

command -v node >/dev/null 2>&1 || fail "node not found: install Node.js 20 or newer first"
command -v npm >/dev/null 2>&1 || fail "npm not found: install Node.js 20 or newer first"
major=$(node -p 'process.versions.node.split(".")[0]')
[ "$major" -ge 20 ] || fail "Node.js $(node -v) is too old: svc needs 20 or newer"

# A relative tarball or directory is resolved before npm runs elsewhere.
case "$SVC_PACKAGE" in
  ./*|../*) SVC_PACKAGE="$(cd "$(dirname "$SVC_PACKAGE")" && pwd)/$(basename "$SVC_PACKAGE")" ;;
esac

mkdir -p "$SVC_HOME"
chmod 700 "$SVC_HOME"
echo "Installing $SVC_PACKAGE into $prefix"
npm install --global --prefix "$prefix" --no-audit --no-fund --loglevel=error "$SVC_PACKAGE" >&2 \
  || fail "npm install $SVC_PACKAGE failed"
bin="$prefix/bin/svc"
[ -x "$bin" ] || fail "the package installed no svc command ($bin)"

shim=""
if [ -d "$SVC_BIN_DIR" ] && [ -w "$SVC_BIN_DIR" ]; then
  existing="$SVC_BIN_DIR/svc"
  if [ -e "$existing" ] || [ -L "$existing" ]; then
    case "$(readlink "$existing" 2>/dev/null || true)" in
      "$prefix"/*) ln -sf "$bin" "$existing"; shim="$existing" ;;
      *) echo "warning: $existing exists and was not installed by this script; left alone (add $prefix/bin to PATH)" >&2 ;;
    esac
  else
    ln -s "$bin" "$existing"
    shim="$existing"
  fi
else
  echo "note: $SVC_BIN_DIR is not writable: add $prefix/bin to your PATH" >&2
fi

# Keep this script for `svc update` (not possible when it was piped into sh).
if [ -f "$0" ] && [ "$(basename "$0")" = "install.sh" ]; then
  if [ "$(cd "$(dirname "$0")" && pwd)/install.sh" != "$SVC_HOME/install.sh" ]; then
    cp "$0" "$SVC_HOME/install.sh"
  fi
fi

json_escape() { printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g'; }
cat >"$SVC_HOME/install.json" <<JSON
{
  "method": "install.sh",
  "package": "$(json_escape "$SVC_PACKAGE")",
  "prefix": "$(json_escape "$prefix")",
  "bin": "$(json_escape "$bin")",
  "shim": $( [ -n "$shim" ] && printf '"%s"' "$(json_escape "$shim")" || printf 'null' ),
  "installed_at": "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
}
JSON

version=$("$bin" version 2>/dev/null || echo "svc (version unknown)")
echo "Installed $version: ${shim:-$bin}"
