-- When each execution (exec or code call) of a tenant started, on any server: the
-- executions_per_minute quota is a sliding minute over these rows, taken under the tenant's row
-- lock like the quota holds, so servers together never start more than the limit. Rows older than
-- a minute are deleted by the next start of the same tenant.
CREATE TABLE execution_starts (
  tenant text NOT NULL REFERENCES tenants (name) ON DELETE CASCADE,
  started timestamptz NOT NULL
);
CREATE INDEX execution_starts_tenant ON execution_starts (tenant, started);
