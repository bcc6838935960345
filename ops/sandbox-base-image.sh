#!/usr/bin/env bash
# Builds a LOCAL base image for the sandbox image (ops/sandbox.Dockerfile) on a machine
# that cannot pull from a registry, with `docker import` of a root filesystem.
#
#   ops/sandbox-base-image.sh [--tag svc-sandbox-base:local] [--from host|debootstrap]
#                             [--suite bookworm] [--mirror http://deb.debian.org/debian]
#
# --from host (default, seconds, no network): the rootfs is this host's node, git (with
#   its helpers for https remotes), a shell, coreutils and the usual text tools, plus
#   every shared library they load (ldd closure, NSS modules), the CA certificates, and
#   a passwd/group with user `svc` (1000). Needs a glibc Linux host with node >= 20.
# --from debootstrap (a few minutes, needs a Debian mirror): `debootstrap
#   --variant=minbase` of the suite with git and ca-certificates, plus this host's node
#   binary (node is not in Debian at version 20).
# Either way the image has node at /usr/bin/node, git, /bin/sh, and user svc (1000).
set -euo pipefail

tag=svc-sandbox-base:local
from=host
suite=bookworm
mirror=http://deb.debian.org/debian
while [ $# -gt 0 ]; do
  case "$1" in
    --tag) tag=$2; shift 2 ;;
    --from) from=$2; shift 2 ;;
    --suite) suite=$2; shift 2 ;;
    --mirror) mirror=$2; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "sandbox-base-image: unknown argument $1" >&2; exit 2 ;;
  esac
done

command -v docker >/dev/null || { echo "sandbox-base-image: docker CLI not found" >&2; exit 1; }
docker info >/dev/null 2>&1 || { echo "sandbox-base-image: no Docker engine reachable (start dockerd)" >&2; exit 1; }
node_bin=$(readlink -f "$(command -v node)")
node_major=$("$node_bin" -p 'process.versions.node.split(".")[0]')
[ "$node_major" -ge 20 ] || { echo "sandbox-base-image: node >= 20 needed on this host, found $("$node_bin" -v)" >&2; exit 1; }

rootfs=$(mktemp -d /tmp/svc-rootfs.XXXXXX)
trap 'rm -rf "$rootfs"' EXIT

# Copies a host path into the rootfs at the same path; a symlink chain is recreated
# (link, then its target), so /usr/bin/awk -> /etc/alternatives/awk -> mawk works.
copy_path() {
  local p=$1
  while [ -L "$p" ]; do
    mkdir -p "$rootfs$(dirname "$p")"
    [ -e "$rootfs$p" ] || [ -L "$rootfs$p" ] || cp -P "$p" "$rootfs$p"
    local t
    t=$(readlink "$p")
    case "$t" in /*) p=$t ;; *) p=$(dirname "$p")/$t ;; esac
  done
  [ -e "$p" ] || return 0
  mkdir -p "$rootfs$(dirname "$p")"
  [ -e "$rootfs$p" ] || cp -a "$p" "$rootfs$p"
}

if [ "$from" = host ]; then
  echo "sandbox-base-image: assembling a rootfs from this host's node, git and tools"
  # The top-level layout of a merged-/usr system (or real dirs on an older one).
  for top in bin sbin lib lib32 lib64 libx32; do
    if [ -L "/$top" ]; then
      t=$(readlink "/$top")
      case "$t" in /*) mkdir -p "$rootfs$t" ;; *) mkdir -p "$rootfs/$t" ;; esac
      ln -s "$t" "$rootfs/$top"
    fi
  done
  mkdir -p "$rootfs"/{usr/bin,usr/local/bin,etc,tmp,root,proc,sys,dev,run,var/tmp}
  chmod 1777 "$rootfs/tmp" "$rootfs/var/tmp"

  tools="sh bash env ls cat cp mv rm mkdir rmdir ln chmod chown touch head tail grep egrep sed awk find xargs sort uniq
    wc tr cut tee date sleep id uname readlink realpath dirname basename mktemp true false printf echo test stat du df
    which tar gzip gunzip diff cmp patch ps kill hostname nproc timeout less ssh"
  elves=("$node_bin" /usr/bin/git)
  copy_path "$node_bin"
  [ "$node_bin" = /usr/bin/node ] || ln -sf "$node_bin" "$rootfs/usr/bin/node"
  copy_path /usr/bin/git
  for t in $tools; do
    p=$(type -P "$t" 2>/dev/null || true)
    case "$p" in /*) copy_path "$p"; elves+=("$(readlink -f "$p")") ;; esac
  done
  # git's helpers (remote-https, credential, ...) and templates.
  for d in /usr/lib/git-core /usr/share/git-core /usr/libexec/git-core; do
    [ -d "$d" ] && { mkdir -p "$rootfs$(dirname "$d")"; cp -a "$d" "$rootfs$d"; }
  done
  for f in "$rootfs"/usr/lib/git-core/*; do [ -f "$f" ] && [ ! -L "$f" ] && elves+=("${f#"$rootfs"}"); done
  # Every shared library they load, and the loader.
  libs=$(for e in "${elves[@]}"; do ldd "$e" 2>/dev/null || true; done | grep -oE '(/[^ ]+\.so[^ ]*)' | sort -u)
  for l in $libs; do copy_path "$l"; done
  # Loaded with dlopen, so ldd does not list them: name service and resolver modules.
  for l in /lib/*-linux-gnu/libnss_files.so* /lib/*-linux-gnu/libnss_dns.so* /lib/*-linux-gnu/libresolv.so* \
           /usr/lib/*-linux-gnu/libnss_files.so* /usr/lib/*-linux-gnu/libnss_dns.so*; do
    [ -e "$l" ] && copy_path "$l"
  done
  # TLS roots.
  [ -d /etc/ssl ] && cp -a /etc/ssl "$rootfs/etc/"
  [ -d /usr/share/ca-certificates ] && { mkdir -p "$rootfs/usr/share"; cp -a /usr/share/ca-certificates "$rootfs/usr/share/"; }
  cat > "$rootfs/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/bin/sh
svc:x:1000:1000:svc:/opt/svc/home:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
EOF
  printf 'root:x:0:\nsvc:x:1000:\nnogroup:x:65534:\n' > "$rootfs/etc/group"
  printf 'passwd: files\ngroup: files\nhosts: files dns\n' > "$rootfs/etc/nsswitch.conf"
  touch "$rootfs/etc/hosts" "$rootfs/etc/resolv.conf"
  [ -e /etc/ld.so.conf ] && cp /etc/ld.so.conf "$rootfs/etc/" && { [ -d /etc/ld.so.conf.d ] && cp -a /etc/ld.so.conf.d "$rootfs/etc/" || true; }
  [ -e /etc/ld.so.cache ] && cp /etc/ld.so.cache "$rootfs/etc/"
elif [ "$from" = debootstrap ]; then
  command -v debootstrap >/dev/null || { echo "sandbox-base-image: debootstrap not installed (apt-get install debootstrap)" >&2; exit 1; }
  echo "sandbox-base-image: debootstrap --variant=minbase $suite from $mirror (a few minutes)"
  debootstrap --variant=minbase --include=git,ca-certificates "$suite" "$rootfs" "$mirror" >/tmp/svc-debootstrap.log 2>&1 \
    || { tail -20 /tmp/svc-debootstrap.log >&2; echo "sandbox-base-image: debootstrap failed (log: /tmp/svc-debootstrap.log)" >&2; exit 1; }
  cp "$node_bin" "$rootfs/usr/bin/node"
  chroot "$rootfs" /usr/bin/node -e 'process.exit(0)' || { echo "sandbox-base-image: this host's node does not run on $suite" >&2; exit 1; }
  chroot "$rootfs" /usr/sbin/groupadd -g 1000 svc
  chroot "$rootfs" /usr/sbin/useradd -u 1000 -g 1000 -d /opt/svc/home -s /bin/sh svc
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
else
  echo "sandbox-base-image: --from must be host or debootstrap" >&2
  exit 2
fi

tar -C "$rootfs" -c . | docker import \
  --change 'ENV PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin' \
  --change 'ENV LANG=C.UTF-8' \
  --change 'CMD ["/bin/sh"]' \
  --message "svc sandbox base ($from)" - "$tag" >/dev/null
echo "sandbox-base-image: built $tag ($(docker image inspect -f '{{.Size}}' "$tag" | awk '{printf "%d MB", $1/1048576}'))"
# Smoke test, without network: node, git (with its https helper) and the user.
docker run --rm --network none --user 1000:1000 "$tag" sh -c \
  'node -e "require(\"node:https\")" && git --version >/dev/null && test -x "$(git --exec-path)/git-remote-https" && id -un' >/dev/null \
  || { echo "sandbox-base-image: node or git does not run in $tag" >&2; exit 1; }
