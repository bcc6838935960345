#!/usr/bin/env bash
# Builds the default sandbox image from this checkout (ops/sandbox.Dockerfile).
#
#   ops/sandbox-image.sh [--tag svc-sandbox:local] [--base svc-sandbox-base:local | node:20-slim]
#                        [--no-runtime]
#
# Default base: svc-sandbox-base:local when that image exists (built offline by
# ops/sandbox-base-image.sh), else node:20-slim (pulled from Docker Hub). --no-runtime
# leaves opencode out (a smaller image, for tests that bring their own runtime).
set -euo pipefail
cd "$(dirname "$0")/.."
tag=svc-sandbox:local
base=
runtime=
while [ $# -gt 0 ]; do
  case "$1" in
    --tag) tag=$2; shift 2 ;;
    --base) base=$2; shift 2 ;;
    --no-runtime) runtime=--no-runtime; shift ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "sandbox-image: unknown argument $1" >&2; exit 2 ;;
  esac
done
if [ -z "$base" ]; then
  if docker image inspect svc-sandbox-base:local >/dev/null 2>&1; then base=svc-sandbox-base:local; else base=node:20-slim; fi
fi
docker info >/dev/null 2>&1 || { echo "sandbox-image: no Docker engine answers ('docker info' fails): start dockerd, then run this again" >&2; exit 1; }
# A base neither here nor pullable (no registry): say which script builds one, not Docker's raw registry error.
if ! docker image inspect "$base" >/dev/null 2>&1 && ! pull_err=$(docker pull -q "$base" 2>&1 >/dev/null); then
  echo "sandbox-image: the base image $base is not on this machine and could not be pulled (${pull_err%%$'\n'*})" >&2
  echo "sandbox-image: build the local base without a registry with ops/sandbox-base-image.sh, then run this again (it uses svc-sandbox-base:local), or pass --base <an image you have>" >&2
  exit 1
fi
[ -f dist/agentd/svc-agent.js ] && [ -f dist/ops/sandbox-context.js ] || npm run build
ctx=$(mktemp -d /tmp/svc-sandbox-ctx.XXXXXX)
trap 'rm -rf "$ctx"' EXIT
node dist/ops/sandbox-context.js "$ctx" $runtime
cp ops/sandbox.Dockerfile "$ctx/Dockerfile"
# Host networking for the build: no bridge traffic (the RUN steps need none with the
# local base; with node:20-slim the git install goes out through the host).
DOCKER_BUILDKIT=0 docker build --network host -q --build-arg "BASE_IMAGE=$base" -t "$tag" "$ctx" >/dev/null
echo "sandbox-image: built $tag from $base ($(docker image inspect -f '{{.Size}}' "$tag" | awk '{printf "%d MB", $1/1048576}'))"
