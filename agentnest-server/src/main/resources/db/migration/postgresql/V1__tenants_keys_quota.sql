-- The server's shared state in PostgreSQL (store.postgres in server.yaml): tenants, their API keys
-- (only SHA-256 hashes of the keys), admin keys, which tenant each sandbox belonged to, and the
-- quota holds every server of the deployment counts against a tenant's limits.

CREATE TABLE tenants (
  name text PRIMARY KEY CHECK (name ~ '^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$'),
  max_sandboxes integer NOT NULL CHECK (max_sandboxes >= 0),
  memory_bytes bigint NOT NULL CHECK (memory_bytes >= 0),
  cpus double precision NOT NULL CHECK (cpus >= 0),
  rps integer NOT NULL,
  max_sandbox_memory bigint,
  allow_hosts text[],
  created timestamptz NOT NULL,
  executions_per_minute integer NOT NULL DEFAULT 600,
  approvals text CHECK (approvals IN ('none', 'recommended')),
  max_snapshots integer,
  snapshot_bytes bigint,
  max_pids bigint,
  approver_role_required boolean NOT NULL DEFAULT false
);

CREATE TABLE api_keys (
  id text PRIMARY KEY CHECK (id ~ '^[0-9a-f]{16}$'),
  tenant text NOT NULL REFERENCES tenants (name),
  hash text NOT NULL CHECK (hash ~ '^[0-9a-f]{64}$'),
  created timestamptz NOT NULL,
  expires timestamptz,
  revoked timestamptz,
  role text NOT NULL DEFAULT 'agent' CHECK (role IN ('agent', 'approver'))
);
CREATE INDEX api_keys_tenant ON api_keys (tenant, created);

CREATE TABLE admin_keys (
  id text PRIMARY KEY CHECK (id ~ '^[0-9a-f]{16}$'),
  hash text NOT NULL CHECK (hash ~ '^[0-9a-f]{64}$'),
  created timestamptz NOT NULL,
  revoked timestamptz
);

-- Kept after a sandbox is gone: the tenant-wide audit query reads a destroyed sandbox's records.
CREATE TABLE sandbox_owners (
  id text PRIMARY KEY,
  tenant text NOT NULL,
  created timestamptz NOT NULL
);
CREATE INDEX sandbox_owners_tenant ON sandbox_owners (tenant, created);

-- One row per sandbox (or create under way) of any server: a tenant's use is the sum of its rows
-- that have not expired. A create takes its row in a transaction that first locks the tenant's row
-- (SELECT ... FOR UPDATE), so two servers' racing creates are counted one after the other and
-- never both pass a full quota. A server that dies leaves rows that lapse with their sandbox's
-- expiry, so its tenants' quota comes back without anyone cleaning up.
CREATE TABLE quota_holds (
  id text PRIMARY KEY,
  tenant text NOT NULL REFERENCES tenants (name) ON DELETE CASCADE,
  memory_bytes bigint NOT NULL CHECK (memory_bytes >= 0),
  millicpus bigint NOT NULL CHECK (millicpus >= 0),
  created timestamptz NOT NULL,
  expires timestamptz NOT NULL
);
CREATE INDEX quota_holds_tenant ON quota_holds (tenant, expires);
