-- Contacts, object types, objects, contact-object links, lists and list members
-- (docs/contacts-and-lists.md). Every row carries
-- team_id and every lookup filters on it.

-- A contact is a person identified by an E.164 phone number, unique per team.
-- The team's shared web contact (create-web-session without contact_id) has no
-- number: phone_number is NULL and shared_web is true; at most one per team.
CREATE TABLE contacts (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  team_id uuid NOT NULL REFERENCES teams (id),
  phone_number text,
  shared_web boolean NOT NULL DEFAULT false,
  first_name text,
  last_name text,
  full_name text GENERATED ALWAYS AS (
    NULLIF(btrim(COALESCE(first_name, '') || ' ' || COALESCE(last_name, '')), '')
  ) STORED,
  email text,
  address text,
  location text,
  gender text,
  age integer,
  title text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT contacts_phone_or_shared_web CHECK ((phone_number IS NULL) = shared_web),
  CONSTRAINT contacts_team_phone_unique UNIQUE (team_id, phone_number)
);
CREATE UNIQUE INDEX contacts_team_shared_web_idx ON contacts (team_id) WHERE shared_web;
CREATE INDEX contacts_team_created_idx ON contacts (team_id, created_at, id);

-- Object types: a schema of field name -> type name ('string', 'number', ...).
CREATE TABLE object_types (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  team_id uuid NOT NULL REFERENCES teams (id),
  type_name text NOT NULL,
  display_name text NOT NULL,
  description text NOT NULL DEFAULT '',
  schema jsonb NOT NULL DEFAULT '{}'::jsonb,
  validation_mode text NOT NULL DEFAULT 'off' CHECK (validation_mode IN ('off', 'strict')),
  unique_by_contact boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT object_types_team_name_unique UNIQUE (team_id, type_name)
);
CREATE INDEX object_types_team_created_idx ON object_types (team_id, created_at, id);

-- Objects ("custom variables" in the app): free-form JSON data of one type.
CREATE TABLE objects (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  team_id uuid NOT NULL REFERENCES teams (id),
  type_id uuid NOT NULL REFERENCES object_types (id),
  parent_id uuid REFERENCES objects (id),
  name text,
  data jsonb NOT NULL DEFAULT '{}'::jsonb,
  -- The upsert key (path into data, value) the object was last written with.
  upsert_path text,
  upsert_value text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX objects_team_type_idx ON objects (team_id, type_id);
-- Speeds up finding an object by an upsert key it was written with.
CREATE INDEX objects_type_upsert_key_idx ON objects (type_id, upsert_path, upsert_value);
CREATE INDEX objects_data_idx ON objects USING gin (data jsonb_path_ops);

-- Objects linked to contacts (object_data of a contact).
CREATE TABLE contact_objects (
  contact_id uuid NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
  object_id uuid NOT NULL REFERENCES objects (id) ON DELETE CASCADE,
  team_id uuid NOT NULL REFERENCES teams (id),
  type_id uuid NOT NULL REFERENCES object_types (id),
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (contact_id, object_id)
);
CREATE INDEX contact_objects_object_idx ON contact_objects (object_id);
CREATE INDEX contact_objects_contact_type_idx ON contact_objects (contact_id, type_id);

-- Lists of contacts; deleted_at set = soft-deleted (answers 404 everywhere).
CREATE TABLE lists (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  team_id uuid NOT NULL REFERENCES teams (id),
  name text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  deleted_at timestamptz
);
CREATE INDEX lists_team_created_idx ON lists (team_id, created_at, id) WHERE deleted_at IS NULL;

-- List members. seq grows with every addition: it orders a list's contacts for paging
-- and lets a consumer (a batch's intake) read "members added after seq N".
CREATE TABLE list_contacts (
  seq bigint GENERATED ALWAYS AS IDENTITY,
  list_id uuid NOT NULL REFERENCES lists (id),
  contact_id uuid NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
  team_id uuid NOT NULL REFERENCES teams (id),
  added_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (list_id, contact_id)
);
CREATE UNIQUE INDEX list_contacts_list_seq_idx ON list_contacts (list_id, seq);
CREATE INDEX list_contacts_contact_idx ON list_contacts (contact_id);
