-- The approvals queue every server shares: a question asked by a sandbox on one server is listed
-- and answered through any other. The answer is written here and announced with
-- NOTIFY agentnest_approvals (payload: the question's id) to the server whose sandbox waits.
CREATE TABLE approvals (
  id text PRIMARY KEY CHECK (id ~ '^apr_[0-9a-f]{24}$'),
  tenant text NOT NULL,
  sandbox_id text NOT NULL,
  kind text NOT NULL,
  target text NOT NULL,
  detail text NOT NULL,
  requested timestamptz NOT NULL,
  expires timestamptz NOT NULL,
  approve boolean,
  reason text,
  decided_by text,
  decided timestamptz
);
CREATE INDEX approvals_waiting ON approvals (tenant, requested) WHERE decided IS NULL;
