-- Tenant reader roles (the read-only SQL tool's logins) can do no more than read their own schema.

-- Their passwords are derived from a secret (HMAC of the tenant id) and never stored.
ALTER TABLE tenant_readers DROP COLUMN password;

-- No temporary tables for roles that are not granted them (PUBLIC had TEMP on every database); the
-- owner and the app role keep theirs.
DO $$
BEGIN
    EXECUTE format('REVOKE TEMPORARY ON DATABASE %I FROM PUBLIC', current_database());
    EXECUTE format('GRANT TEMPORARY ON DATABASE %I TO CURRENT_USER', current_database());
END $$;
REVOKE CREATE ON SCHEMA public FROM PUBLIC;

-- Large objects outlive transactions and could be shared with other roles: their functions are not
-- PUBLIC's (only a superuser may change that; on a managed server without one, the SQL tool's
-- allow-list still refuses them).
DO $$
DECLARE
    fn regprocedure;
BEGIN
    IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        FOR fn IN
            SELECT p.oid::regprocedure FROM pg_proc p
            WHERE p.pronamespace = 'pg_catalog'::regnamespace
              AND (p.proname LIKE 'lo\_%' OR p.proname IN ('loread', 'lowrite'))
        LOOP
            EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', fn);
        END LOOP;
    END IF;
END $$;

-- One place for a reader role's limits, applied to every reader at creation and to existing ones here.
CREATE FUNCTION master_agent_harden_reader(reader text, data_schema text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('ALTER ROLE %I NOCREATEDB NOCREATEROLE NOINHERIT CONNECTION LIMIT 8', reader);
    EXECUTE format('ALTER ROLE %I SET search_path = %I', reader, data_schema);
    EXECUTE format('ALTER ROLE %I SET default_transaction_read_only = on', reader);
    EXECUTE format('ALTER ROLE %I SET statement_timeout = %L', reader, '30s');
    EXECUTE format('ALTER ROLE %I SET idle_in_transaction_session_timeout = %L', reader, '10s');
    EXECUTE format('ALTER ROLE %I SET work_mem = %L', reader, '4MB');
    -- temp_file_limit is a superuser setting; without one, work_mem and the statement timeout bound it.
    IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        EXECUTE format('ALTER ROLE %I SET temp_file_limit = %L', reader, '64MB');
    END IF;
    EXECUTE format('REVOKE ALL ON SCHEMA public FROM %I', reader);
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO %I', data_schema, reader);
    EXECUTE format('REVOKE CREATE ON SCHEMA %I FROM %I', data_schema, reader);
    EXECUTE format('GRANT CONNECT ON DATABASE %I TO %I', current_database(), reader);
END $$;

SELECT master_agent_harden_reader(r.role_name, t.data_schema)
FROM tenant_readers r JOIN tenants t USING (tenant_id)
WHERE t.data_schema IS NOT NULL;
