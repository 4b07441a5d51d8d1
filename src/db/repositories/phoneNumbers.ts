import type { Queryable } from '../pool.js';

export interface PhoneNumberRecord {
  id: string;
  team_id: string;
  phone_number: string;
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

export async function findTeamPhoneNumber(db: Queryable, teamId: string, phoneNumber: string): Promise<PhoneNumberRecord | undefined> {
  const { rows } = await db.query<PhoneNumberRecord>('SELECT * FROM phone_numbers WHERE team_id = $1 AND phone_number = $2', [teamId, phoneNumber]);
  return rows[0];
}
