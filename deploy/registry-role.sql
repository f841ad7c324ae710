-- The registry's database role on a PostgreSQL you administer (a managed
-- service, the compose file's server): it owns the tables its migrations
-- create, and holds nothing more. `registry serve` and `registry migrate`
-- connect as this role; no superuser, no CREATEDB, no CREATEROLE.
--
-- Run once, as an administrator, connected to the registry's (empty) database:
--
--   psql "postgresql://admin@db.example:5432/registry" \
--        -v password="$REGISTRY_DB_PASSWORD" -f deploy/registry-role.sql
--
-- then set REGISTRY_DATABASE_URL=postgresql://registry:<password>@db.example:5432/registry.
-- Nothing else is needed: no extension (gen_random_uuid is built in since
-- PostgreSQL 13), no grant for LISTEN/NOTIFY or advisory locks.
-- `registry serve` on its embedded PostgreSQL does the same by itself
-- (registry/store/roles.py).

CREATE ROLE registry LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS
    PASSWORD :'password';

-- Only the registry's role may connect to its database.
SELECT format('REVOKE ALL ON DATABASE %I FROM PUBLIC', current_database()) \gexec
SELECT format('GRANT CONNECT ON DATABASE %I TO registry', current_database()) \gexec

-- The migrations create the tables, so the role needs CREATE in the schema
-- (PostgreSQL 15 and later no longer grant it to PUBLIC).
GRANT USAGE, CREATE ON SCHEMA public TO registry;
