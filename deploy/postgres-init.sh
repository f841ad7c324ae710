#!/bin/sh
# Run by the postgres image once, when it initialises an empty data volume
# (/docker-entrypoint-initdb.d): the registry's own role, from
# deploy/registry-role.sql, with the passwords of REGISTRY_DB_PASSWORD and
# REGISTRY_DB_OWNER_PASSWORD.
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
     -v password="$REGISTRY_DB_PASSWORD" -v owner_password="$REGISTRY_DB_OWNER_PASSWORD" \
     -f /registry-role.sql
