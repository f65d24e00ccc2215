#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the tests (../shared/REPLICAS.md §4).
#
#   scripts/pg.sh start DIR   initdb + start on a free loopback port; prints
#                             the DATABASE_URL (also written to DIR/url); the
#                             URL of the same cluster over its Unix socket (in
#                             DIR) is written to DIR/socket_url
#   scripts/pg.sh stop DIR    stops it (immediate) and removes DIR
#
# The server refuses to run as root: as root it runs as the `postgres` user.
# Tests create one database per test (CREATE DATABASE t_<id>).
set -euo pipefail
cmd=${1:?usage: pg.sh start|stop DIR} dir=${2:?usage: pg.sh start|stop DIR}
PG_BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[[ -x "$PG_BIN/initdb" ]] || { echo "pg.sh: PostgreSQL is not installed (scripts/setup.sh test installs postgresql-15)" >&2; exit 1; }
as_pg() { if [[ $(id -u) == 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi; }
case "$cmd" in
  start)
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    [[ $(id -u) == 0 ]] && chown postgres: "$dir"
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    as_pg "$PG_BIN/initdb" -D "$dir/data" -A trust -U stopgo -E UTF8 --locale=C.UTF-8 --no-sync >"$dir/initdb.log"
    as_pg "$PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/log" -w \
      -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=300" start >/dev/null
    url="postgresql://stopgo@127.0.0.1:$port/postgres"
    echo "$url" > "$dir/url"
    host=$(python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$dir")
    echo "postgresql://stopgo@$host:$port/postgres" > "$dir/socket_url"
    echo "$url"
    ;;
  stop)
    [[ -d "$dir/data" ]] && as_pg "$PG_BIN/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null || true
    rm -rf "$dir"
    ;;
  *) echo "usage: pg.sh start|stop DIR" >&2; exit 2 ;;
esac
