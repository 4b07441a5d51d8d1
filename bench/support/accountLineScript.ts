// The script the voice-turn benchmarks run (bench/voiceTurns.ts for browser calls,
// bench/sipCalls.ts for phone calls), so their turn latencies compare like with like.

/** Every agent line but the last is a question, so a caller answers each pause in the agent's audio. */
export const ACCOUNT_LINE_SCRIPT = {
  name: 'Voice turns bench',
  steps: [
    { id: 'ask_pin', type: 'ask', question: 'Hello, this is the account line. Please say your account number, one digit at a time.', variable: 'answers.pin', expect: 'digits' },
    { id: 'ask_holder', type: 'ask', question: 'Are you the account holder?', variable: 'answers.holder', expect: 'yes_no' },
    { id: 'ask_card', type: 'ask', question: 'Please say the last four digits of your card.', variable: 'answers.card', expect: 'digits' },
    { id: 'ask_time', type: 'ask', question: 'Is this a good time to talk?', variable: 'answers.time', expect: 'yes_no' },
    {
      id: 'verify',
      type: 'tool',
      tool: 'Auth | Check',
      settings: { record_array: ['2946', '5392'], check_array: ['{{answers.pin}}', '{{answers.card}}'], required_match_count: '', exact: 'Yes' },
    },
    { id: 'bye', type: 'end', text: 'Thank you. Goodbye.' },
  ],
};

/** What the callers say, in order (words pocketsphinx hears reliably from festival's voice through Opus). */
export const ACCOUNT_LINE_ANSWERS = ['two nine four six', 'yes', 'five three nine two', 'no'];
