-- The slot queue (src/db/repositories/concurrencySlots.ts) orders a team's due phone calls
-- by (scheduled_time, seq) among those still scheduled.
CREATE INDEX calls_team_scheduled_queue_idx ON calls (team_id, scheduled_time, seq) WHERE status = 'scheduled';
