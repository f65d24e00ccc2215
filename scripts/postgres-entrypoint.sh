#!/bin/sh
# The PostgreSQL container of the `replicas` compose profile: creates the
# cluster on first start (user `stopgo`, password from POSTGRES_PASSWORD,
# SCRAM over the network), then runs the server in the foreground.
set -eu
BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
: "${PGDATA:=/var/lib/postgresql/data}"
: "${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD}"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  pw=$(mktemp)
  printf '%s' "$POSTGRES_PASSWORD" > "$pw"
  "$BIN/initdb" -D "$PGDATA" -U stopgo --pwfile="$pw" -E UTF8 --locale=C.UTF-8 \
    --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  rm -f "$pw"
  echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
  echo "postgres: cluster created in $PGDATA"
fi
exec "$BIN/postgres" -D "$PGDATA" -c listen_addresses='*' -c max_connections=200
