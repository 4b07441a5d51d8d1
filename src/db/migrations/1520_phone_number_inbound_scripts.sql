-- Inbound calls (docs/telephony.md, "Inbound calls"): the script a team's number runs for the
-- calls it receives. Null: the number takes no calls (an INVITE to it is answered 480).
ALTER TABLE phone_numbers ADD COLUMN inbound_script_id uuid REFERENCES scripts (id);
-- An incoming call names only the number it was made to: at most one team may answer it.
CREATE UNIQUE INDEX phone_numbers_inbound_idx ON phone_numbers (phone_number) WHERE inbound_script_id IS NOT NULL;
