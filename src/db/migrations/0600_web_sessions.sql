-- Web sessions (docs/web-calls.md). The workflow web-session-<id> decides minted → used | expired; this
-- row is its read model, written by its activities, and the lookup from token to session.

CREATE TABLE web_sessions (
  id uuid PRIMARY KEY,
  team_id uuid NOT NULL REFERENCES teams (id),
  -- SHA-256 (hex) of the session token; the token itself is shown once and never stored.
  token_hash text NOT NULL UNIQUE,
  -- Fixed at minting: the script, the contact and the AI-side number.
  script_id uuid NOT NULL REFERENCES scripts (id),
  contact_id uuid NOT NULL REFERENCES contacts (id),
  did text,
  participant_identity text,
  -- The objects map as sent (already linked to the contact at minting).
  objects jsonb,
  status text NOT NULL DEFAULT 'minted' CHECK (status IN ('minted', 'used', 'expired')),
  expires_at timestamptz NOT NULL,
  -- The web call created at redemption.
  call_id uuid REFERENCES calls (id),
  created_at timestamptz NOT NULL DEFAULT now(),
  used_at timestamptz,
  expired_at timestamptz,
  CHECK ((status = 'used') = (call_id IS NOT NULL))
);
CREATE INDEX web_sessions_team_created_idx ON web_sessions (team_id, created_at DESC);
CREATE UNIQUE INDEX web_sessions_call_idx ON web_sessions (call_id) WHERE call_id IS NOT NULL;
