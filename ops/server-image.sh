#!/usr/bin/env bash
# Builds the server image from this checkout, offline (ops/server.Dockerfile with a
# prebuilt context: no npm inside the build).
#
#   ops/server-image.sh [--tag svc-server:local] [--base svc-sandbox-base:local | node:20-slim]
#
# Default base: svc-sandbox-base:local when that image exists (ops/sandbox-base-image.sh
# builds it without a registry), else node:20-slim (pulled from Docker Hub).
set -euo pipefail
cd "$(dirname "$0")/.."
tag=svc-server:local
base=
while [ $# -gt 0 ]; do
  case "$1" in
    --tag) tag=$2; shift 2 ;;
    --base) base=$2; shift 2 ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    *) echo "server-image: unknown argument $1" >&2; exit 2 ;;
  esac
done
if [ -z "$base" ]; then
  if docker image inspect svc-sandbox-base:local >/dev/null 2>&1; then base=svc-sandbox-base:local; else base=node:20-slim; fi
fi
[ -f dist/ops/svc-server.js ] && [ -f dist/ops/server-context.js ] || npm run build
ctx=$(mktemp -d /tmp/svc-server-ctx.XXXXXX)
trap 'rm -rf "$ctx"' EXIT
# A minimal local base lacks a few system libraries PostgreSQL loads: bring the host's.
libs=
case "$base" in *:local) libs=--host-libs ;; esac
node dist/ops/server-context.js "$ctx" $libs
# Host networking for the build: no bridge traffic.
DOCKER_BUILDKIT=0 docker build --network host -q -f ops/server.Dockerfile \
  --build-arg "BASE_IMAGE=$base" --build-arg "BUILD_IMAGE=$base" -t "$tag" "$ctx" >/dev/null
echo "server-image: built $tag from $base ($(docker image inspect -f '{{.Size}}' "$tag" | awk '{printf "%d MB", $1/1048576}'))"
