#!/usr/bin/env bash
# Builds a LOCAL PostgreSQL image from Debian's package, for ops/compose.yaml on a machine
# that cannot pull from a registry: `debootstrap --variant=minbase` of the suite, then
# `apt-get install postgresql-<major>` in that root with chroot (on the host, never in a
# docker build: that would need a bridge network), then `docker import`.
#
#   ops/postgres-image.sh [--tag svc-postgres:local] [--suite bookworm] [--major 15]
#                         [--mirror http://deb.debian.org/debian] [--force]
#
# Cached: an image with this tag built from the same recipe (label svc.postgres-image: a
# hash of `recipe` below, the entrypoint and the options) is kept and the script exits
# at once; --force rebuilds.
# The image takes the same interface as Docker Hub's `postgres` image, so compose can use
# either: POSTGRES_USER / POSTGRES_PASSWORD / POSTGRES_DB create the cluster on the first
# start in PGDATA (/var/lib/postgresql/data), and `postgres -c ...` is the command.
# Runs as the `postgres` user; needs root (debootstrap, chroot) and a Debian mirror.
set -euo pipefail
self=$(readlink -f "$0")
cd "$(dirname "$self")/.."

tag=svc-postgres:local
suite=bookworm
major=15
mirror=http://deb.debian.org/debian
force=
while [ $# -gt 0 ]; do
  case "$1" in
    --tag) tag=$2; shift 2 ;;
    --suite) suite=$2; shift 2 ;;
    --major) major=$2; shift 2 ;;
    --mirror) mirror=$2; shift 2 ;;
    --force) force=1; shift ;;
    -h|--help) sed -n '2,16p' "$self"; exit 0 ;;
    *) echo "postgres-image: unknown argument $1" >&2; exit 2 ;;
  esac
done

command -v docker >/dev/null || { echo "postgres-image: docker CLI not found" >&2; exit 1; }
docker info >/dev/null 2>&1 || { echo "postgres-image: no Docker engine reachable (start dockerd)" >&2; exit 1; }
# What the image is made of. Bump `recipe` when a build step below changes.
recipe=1
stamp=$( { echo "recipe $recipe $suite $major $mirror"; cat ops/postgres-entrypoint.sh; } | sha256sum | cut -c1-16)
if [ -z "$force" ] && [ "$(docker image inspect -f '{{index .Config.Labels "svc.postgres-image"}}' "$tag" 2>/dev/null || true)" = "$stamp" ]; then
  echo "postgres-image: $tag is current ($stamp); --force rebuilds"
  exit 0
fi
[ "$(id -u)" = 0 ] || { echo "postgres-image: run as root (debootstrap and chroot)" >&2; exit 1; }
command -v debootstrap >/dev/null || { echo "postgres-image: debootstrap not installed (apt-get install debootstrap)" >&2; exit 1; }

rootfs=$(mktemp -d /tmp/svc-pg-rootfs.XXXXXX)
log=/tmp/svc-postgres-image.log
cleanup() {
  umount "$rootfs/proc" 2>/dev/null || true
  rm -rf "$rootfs"
}
trap cleanup EXIT
: >"$log"

started=$(date +%s)
echo "postgres-image: debootstrap --variant=minbase $suite from $mirror"
debootstrap --variant=minbase "$suite" "$rootfs" "$mirror" >>"$log" 2>&1 \
  || { tail -20 "$log" >&2; echo "postgres-image: debootstrap failed (log: $log)" >&2; exit 1; }

echo "postgres-image: apt-get install postgresql-$major in the root (chroot)"
# No service starts in the chroot, and no cluster is made by the package: the entrypoint
# makes one in the volume on the first start.
printf '#!/bin/sh\nexit 101\n' >"$rootfs/usr/sbin/policy-rc.d"
chmod 755 "$rootfs/usr/sbin/policy-rc.d"
mkdir -p "$rootfs/etc/postgresql-common/createcluster.d"
echo 'create_main_cluster = false' >"$rootfs/etc/postgresql-common/createcluster.d/svc.conf"
cp /etc/resolv.conf "$rootfs/etc/resolv.conf"
mount -t proc proc "$rootfs/proc"
chroot "$rootfs" /usr/bin/env DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8 \
  sh -c "apt-get update -qq && apt-get install -y -qq --no-install-recommends postgresql-$major" >>"$log" 2>&1 \
  || { tail -20 "$log" >&2; echo "postgres-image: apt-get install postgresql-$major failed (log: $log)" >&2; exit 1; }
umount "$rootfs/proc"

# The layout the entrypoint expects: binaries on PATH, PGDATA owned by postgres (a new
# named volume takes this directory's owner), the socket directory.
pg_uid=$(chroot "$rootfs" id -u postgres)
pg_gid=$(chroot "$rootfs" id -g postgres)
mkdir -p "$rootfs/var/lib/postgresql/data" "$rootfs/run/postgresql"
chown "$pg_uid:$pg_gid" "$rootfs/var/lib/postgresql" "$rootfs/var/lib/postgresql/data" "$rootfs/run/postgresql"
chmod 700 "$rootfs/var/lib/postgresql/data"
chmod 2775 "$rootfs/run/postgresql"
install -m 755 ops/postgres-entrypoint.sh "$rootfs/usr/local/bin/docker-entrypoint.sh"
rm -f "$rootfs/usr/sbin/policy-rc.d" "$rootfs/etc/resolv.conf"
touch "$rootfs/etc/resolv.conf"
rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/*

tar -C "$rootfs" --numeric-owner -c . | docker import \
  --change "ENV PATH=/usr/lib/postgresql/$major/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin" \
  --change 'ENV LANG=C.UTF-8' \
  --change 'ENV PGDATA=/var/lib/postgresql/data' \
  --change "USER $pg_uid:$pg_gid" \
  --change 'VOLUME ["/var/lib/postgresql/data"]' \
  --change 'ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]' \
  --change 'CMD ["postgres"]' \
  --change "LABEL svc.postgres-image=$stamp" \
  --message "svc PostgreSQL $major (Debian $suite package)" - "$tag" >/dev/null
echo "postgres-image: built $tag in $(( $(date +%s) - started )) s ($(docker image inspect -f '{{.Size}}' "$tag" | awk '{printf "%d MB", $1/1048576}'))"
# Smoke test, without network: the server binary runs as postgres.
docker run --rm --network none --entrypoint postgres "$tag" --version >/dev/null \
  || { echo "postgres-image: postgres does not run in $tag" >&2; exit 1; }
