import { scriptDefinitionSchema, type ScriptDefinition } from './definition.js';

/**
 * The script `admin bootstrap` gives every new team: greets the contact, asks for their
 * name and date of birth, runs an Auth Check against the contact's record (full name on
 * the contact, date of birth on a linked `identity` object), branches on the outcome and
 * ends. A contact without an `identity` object cannot be verified (docs/scripts.md).
 */
export const DEMO_SCRIPT: ScriptDefinition = scriptDefinitionSchema.parse({
  name: 'Demo: greet and verify',
  description: 'Greets the contact, asks for their name and date of birth, verifies them with Auth Check, and ends.',
  objectives: [
    { objective: 'Greet the contact', met_when: { step_reached: 'greet' } },
    { objective: 'Verify the caller', met_when: { variable: 'auth_check.verified', equals: true } },
  ],
  structured_data: {
    caller_name: 'answers.name',
    date_of_birth: 'answers.date_of_birth',
    verified: 'auth_check.verified',
    auth_check_status: 'auth_check.status',
  },
  steps: [
    { id: 'greet', type: 'say', text: 'Hello {{contact.first_name}}, this is your voice assistant calling.' },
    { id: 'ask_name', type: 'ask', question: 'Before we go on, could you tell me your full name?', variable: 'answers.name', expect: 'name' },
    { id: 'ask_dob', type: 'ask', question: 'Thank you. And what is your date of birth?', variable: 'answers.date_of_birth', expect: 'date' },
    {
      id: 'verify',
      type: 'tool',
      tool: 'Auth | Check',
      settings: {
        record_array: ['{{contact.full_name}}', '{{objects.identity.date_of_birth}}'],
        check_array: ['{{answers.name}}', '{{answers.date_of_birth}}'],
        required_match_count: '',
        exact: 'No',
      },
    },
    {
      id: 'route',
      type: 'branch',
      cases: [{ when: { variable: 'auth_check.verified', equals: true }, next: 'verified' }],
      default: 'not_verified',
    },
    { id: 'verified', type: 'say', text: 'Thank you, {{contact.first_name}}, you are verified.', next: 'goodbye' },
    { id: 'not_verified', type: 'say', text: 'Sorry, I could not verify your identity, so I cannot go on with this call.', next: 'goodbye' },
    { id: 'goodbye', type: 'end', text: 'Thank you for your time. Goodbye.' },
  ],
});
