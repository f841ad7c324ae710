-- The registry's two database roles on a PostgreSQL you administer (a managed
-- service, the compose file's server):
--
--   registry_owner  owns the tables; `registry migrate` connects as it
--   registry        what `registry serve` connects as: it reads and writes the
--                   tables, and cannot alter or drop them, nor disable the
--                   triggers that keep versions immutable
--
-- Neither is a superuser, nor may create databases or roles. Run once, as an
-- administrator (a superuser, or on PostgreSQL 16+ a role that is a member of
-- registry_owner), connected to the registry's database:
--
--   psql "postgresql://admin@db.example:5432/registry" -v ON_ERROR_STOP=1 \
--        -v password="$REGISTRY_DB_PASSWORD" \
--        -v owner_password="$REGISTRY_DB_OWNER_PASSWORD" -f deploy/registry-role.sql
--
-- then `registry migrate` with postgresql://registry_owner:<owner password>@.../registry
-- and `registry serve` with postgresql://registry:<password>@.../registry.
-- Running it again on a database an earlier release made (where `registry`
-- owned the tables) hands them to registry_owner: the upgrade to this release.
-- Nothing else is needed: no extension (gen_random_uuid is built in since
-- PostgreSQL 13), no grant for LISTEN/NOTIFY or advisory locks.
-- `registry serve` on its embedded PostgreSQL does the same by itself
-- (registry/store/roles.py).

SELECT format('CREATE ROLE registry_owner LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE '
              'NOREPLICATION NOBYPASSRLS PASSWORD %L', :'owner_password')
WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'registry_owner') \gexec
SELECT format('CREATE ROLE registry LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE '
              'NOREPLICATION NOBYPASSRLS PASSWORD %L', :'password')
WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'registry') \gexec

-- Only the registry's roles may connect to its database.
SELECT format('REVOKE ALL ON DATABASE %I FROM PUBLIC', current_database()) \gexec
SELECT format('GRANT CONNECT ON DATABASE %I TO registry, registry_owner', current_database()) \gexec

-- The owner creates the tables (PostgreSQL 15 and later no longer grant CREATE
-- to PUBLIC); the app only uses the schema.
GRANT USAGE, CREATE ON SCHEMA public TO registry_owner;
REVOKE CREATE ON SCHEMA public FROM registry;
GRANT USAGE ON SCHEMA public TO registry;

-- An earlier release's tables (owned by `registry`) go to the owner.
REASSIGN OWNED BY registry TO registry_owner;

-- The app reads and writes the tables there are, and those the owner creates later.
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO registry;
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO registry;
ALTER DEFAULT PRIVILEGES FOR ROLE registry_owner IN SCHEMA public
    GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO registry;
ALTER DEFAULT PRIVILEGES FOR ROLE registry_owner IN SCHEMA public
    GRANT USAGE, SELECT ON SEQUENCES TO registry;
