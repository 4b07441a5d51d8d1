import type { Queryable } from '../pool.js';

export interface PhoneNumberRecord {
  id: string;
  team_id: string;
  phone_number: string;
  /** The script of the calls the number receives (docs/telephony.md, "Inbound calls"); null: it takes none. */
  inbound_script_id: string | null;
  created_at: Date;
}

/** Adds a number to a team; adding it again returns the existing record. */
export async function addPhoneNumber(db: Queryable, teamId: string, phoneNumber: string): Promise<PhoneNumberRecord> {
  const { rows } = await db.query<PhoneNumberRecord>(
    `INSERT INTO phone_numbers (team_id, phone_number) VALUES ($1, $2)
     ON CONFLICT (team_id, phone_number) DO UPDATE SET phone_number = EXCLUDED.phone_number
     RETURNING *`,
    [teamId, phoneNumber],
  );
  return rows[0];
}

/** The team's first number (the oldest): the caller ID of a call that has no number of its own. */
export async function findTeamFirstPhoneNumber(db: Queryable, teamId: string): Promise<string | undefined> {
  const { rows } = await db.query<{ phone_number: string }>('SELECT phone_number FROM phone_numbers WHERE team_id = $1 ORDER BY created_at, phone_number LIMIT 1', [teamId]);
  return rows[0]?.phone_number;
}

export async function findTeamPhoneNumber(db: Queryable, teamId: string, phoneNumber: string): Promise<PhoneNumberRecord | undefined> {
  const { rows } = await db.query<PhoneNumberRecord>('SELECT * FROM phone_numbers WHERE team_id = $1 AND phone_number = $2', [teamId, phoneNumber]);
  return rows[0];
}

/**
 * Sets (or, with null, clears) the script of the calls the team's number receives; undefined
 * when the team has no such number. Another team's number taking calls already is refused by
 * the unique index phone_numbers_inbound_idx (a unique violation).
 */
export async function setInboundScript(db: Queryable, teamId: string, phoneNumber: string, scriptId: string | null): Promise<PhoneNumberRecord | undefined> {
  const { rows } = await db.query<PhoneNumberRecord>(
    'UPDATE phone_numbers SET inbound_script_id = $3 WHERE team_id = $1 AND phone_number = $2 RETURNING *',
    [teamId, phoneNumber, scriptId],
  );
  return rows[0];
}

/** Every team's record of the number (a number may be added to several teams; at most one takes calls). */
export async function findPhoneNumberRecords(db: Queryable, phoneNumber: string): Promise<PhoneNumberRecord[]> {
  const { rows } = await db.query<PhoneNumberRecord>(
    'SELECT * FROM phone_numbers WHERE phone_number = $1 ORDER BY (inbound_script_id IS NULL), created_at',
    [phoneNumber],
  );
  return rows;
}
