-- The web console's sign-in sessions, so that a browser signed in through one server is signed in
-- on every other. The session id (the cookie's value) is kept only as its SHA-256; the CSRF token
-- is kept as is, since the console page reads it back after a reload (it is worthless without
-- the cookie).
CREATE TABLE console_sessions (
  id_hash text PRIMARY KEY CHECK (id_hash ~ '^[0-9a-f]{64}$'),
  tenant text NOT NULL,
  key_id text NOT NULL,
  role text NOT NULL CHECK (role IN ('agent', 'approver')),
  csrf text NOT NULL,
  created timestamptz NOT NULL,
  seen timestamptz NOT NULL
);
CREATE INDEX console_sessions_seen ON console_sessions (seen);
