#!/usr/bin/env bash
# The recipe's PostgreSQL databases, created when missing: langhost's own (DATABASE_URI;
# it sets its tables up itself) and groupmind's (GROUPMIND_SQL_URL; its tables come from
# `groupmind migrate`). Run once before starting the fleet, with deploy/.env loaded:
#   set -a; . deploy/.env; set +a; deploy/create-databases.sh
set -euo pipefail
cd "$(dirname "$0")/.."
: "${DATABASE_URI:?set DATABASE_URI (deploy/.env)}" "${GROUPMIND_SQL_URL:?set GROUPMIND_SQL_URL}"
for url in "$DATABASE_URI" "$GROUPMIND_SQL_URL"; do
  url=${url/postgresql+psycopg:/postgresql:}
  name=${url##*/}; name=${name%%\?*}
  admin=${url%/*}/postgres
  if [ -z "$(psql "$admin" -Atc "SELECT 1 FROM pg_database WHERE datname = '$name'")" ]; then
    psql "$admin" -qc "CREATE DATABASE \"$name\""
    echo "created database $name"
  else
    echo "database $name exists"
  fi
done
deploy/.venv/bin/groupmind migrate
