/** Contact fields a caller may set (docs/contacts-and-lists.md); phone_number already in E.164. */
export interface ContactFields {
  phone_number: string;
  first_name?: string;
  last_name?: string;
  email?: string;
  address?: string;
  location?: string;
  gender?: string;
  age?: number;
  title?: string;
  /** IANA zone name (docs/calls.md, "Which time zone"). */
  timezone?: string;
}
