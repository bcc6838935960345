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
docker info >/dev/null 2>&1 || { echo "server-image: no Docker engine answers ('docker info' fails): start dockerd, then run this again" >&2; exit 1; }
# A base neither here nor pullable (no registry): say which script builds one, not Docker's raw registry error.
if ! docker image inspect "$base" >/dev/null 2>&1 && ! pull_err=$(docker pull -q "$base" 2>&1 >/dev/null); then
  echo "server-image: the base image $base is not on this machine and could not be pulled (${pull_err%%$'\n'*})" >&2
  echo "server-image: build the local base without a registry with ops/sandbox-base-image.sh, then run this again (it uses svc-sandbox-base:local), or pass --base <an image you have>" >&2
  exit 1
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
