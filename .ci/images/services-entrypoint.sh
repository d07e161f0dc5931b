#!/bin/sh
# Entry point of the test image holding PostgreSQL 15 and Redis (built from Debian packages by
# .ci/engine). `postgres ...` behaves as the official postgres image does: on an empty data
# directory it creates POSTGRES_USER (a superuser) with POSTGRES_PASSWORD and the database
# POSTGRES_DB, then serves on every interface. Any other command runs as given (redis-server ...).
set -eu
if [ "${1:-}" != postgres ]; then exec "$@"; fi
shift
: "${PGDATA:=/var/lib/postgresql/data}"
: "${POSTGRES_USER:=postgres}"
: "${POSTGRES_DB:=$POSTGRES_USER}"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  pwfile=$(mktemp)
  printf '%s\n' "${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD}" > "$pwfile"
  initdb -D "$PGDATA" -U "$POSTGRES_USER" --pwfile="$pwfile" --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  rm -f "$pwfile"
  echo 'host all all all scram-sha-256' >> "$PGDATA/pg_hba.conf"
  if [ "$POSTGRES_DB" != postgres ]; then
    echo "create database \"$POSTGRES_DB\"" | postgres --single -D "$PGDATA" postgres >/dev/null
  fi
fi
exec postgres -D "$PGDATA" -c listen_addresses='*' "$@"
