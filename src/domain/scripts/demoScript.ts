import type { ScriptDefinition } from './definition.js';

/** The script `admin bootstrap` gives every new team. */
export const DEMO_SCRIPT: ScriptDefinition = {
  name: 'Demo: greet and verify',
  description: 'Greets the contact, asks for their name and date of birth, verifies them and ends.',
  objectives: ['Greet the contact', 'Verify the caller'],
  steps: [
    { id: 'greet', type: 'say', text: 'Hello {{contact.first_name}}, this is your voice assistant.' },
    { id: 'end', type: 'end', text: 'Thank you, goodbye.' },
  ],
};
