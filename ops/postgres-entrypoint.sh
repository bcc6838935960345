#!/bin/sh
# The entrypoint of the local PostgreSQL image (ops/postgres-image.sh), with the interface
# of Docker Hub's `postgres` image that ops/compose.yaml relies on: on the first start,
# an empty PGDATA gets a cluster whose superuser is POSTGRES_USER (password
# POSTGRES_PASSWORD, scram-sha-256 over TCP; the socket inside the container trusts) and
# a database POSTGRES_DB; then `postgres ...` (the command) runs in the foreground.
set -eu
case "${1:-}" in postgres) ;; -*) set -- postgres "$@" ;; *) exec "$@" ;; esac
: "${PGDATA:=/var/lib/postgresql/data}"
export PGDATA
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  [ -n "${POSTGRES_PASSWORD:-}" ] || { echo "docker-entrypoint: POSTGRES_PASSWORD must be set" >&2; exit 1; }
  user=${POSTGRES_USER:-postgres}
  db=${POSTGRES_DB:-$user}
  pwfile=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
  initdb -D "$PGDATA" -U "$user" --pwfile="$pwfile" -E UTF8 --locale=C.UTF-8 \
    --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  rm -f "$pwfile"
  if [ "$db" != postgres ]; then
    # Single-user mode: nothing listens while the database is made.
    ident=$(printf '%s' "$db" | sed 's/"/""/g')
    echo "CREATE DATABASE \"$ident\"" | postgres --single -D "$PGDATA" postgres >/dev/null
  fi
  echo "docker-entrypoint: initialized $PGDATA (user $user, database $db)"
fi
exec "$@"
