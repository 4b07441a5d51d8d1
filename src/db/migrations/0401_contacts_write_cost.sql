-- Cheaper bulk writes (bench/contacts.ts: 500 contacts added to a list in one request).
-- A foreign key is checked row by row, an index maintained row by row; these were paid on
-- every contact or membership and bought nothing:
--  - list_contacts.team_id and contact_objects.team_id copy the team of the list / contact
--    (for team-scoped reads); list_id, contact_id and object_id keep their foreign keys.
--  - contacts (team_id, created_at, id), objects' GIN index on data and the (type_id,
--    upsert_path, upsert_value) index serve no query (objects are looked up within their
--    type by (team_id, type_id)).
ALTER TABLE list_contacts DROP CONSTRAINT list_contacts_team_id_fkey;
ALTER TABLE contact_objects DROP CONSTRAINT contact_objects_team_id_fkey;
DROP INDEX contacts_team_created_idx;
DROP INDEX objects_data_idx;
DROP INDEX objects_type_upsert_key_idx;
