-- What the E2B face keeps per sandbox, so that a restarted server hands its clients the tokens they
-- already hold: the E2B id, the template and metadata the client asked for, the running sandbox's
-- id, and the two access tokens with the ids of the API keys they were handed to. The tokens are
-- kept as they are (they are handed out again); they work only while every one of those keys is
-- active, and only for this sandbox.
CREATE TABLE e2b_sandboxes (
  id text PRIMARY KEY,
  tenant text NOT NULL,
  template_id text NOT NULL,
  metadata jsonb NOT NULL,
  started timestamptz NOT NULL,
  sandbox_id text NOT NULL,
  envd_token text NOT NULL,
  traffic_token text NOT NULL,
  keys text[] NOT NULL
);
