import { z } from '../schemas.js';

export const hookParams = z.object({
  token: z.string().openapi({ description: 'The hook token from the hook URL (admin hooks create)', example: 'wh_3q2l9...' }),
});

/** Any JSON; the hook's automation maps it (docs/webhooks.md). An empty body counts as {}. */
export const hookPayload = z.unknown().openapi('WebhookPayload', {
  description:
    'Any JSON. For the schedule_call and add_to_list automations, an object with the contact: phone_number (or phone, to, mobile, ...), first_name, last_name, email, address, location, gender, age, title, at the top level or in a nested "contact" object.',
  example: { phone_number: '+14155550123', first_name: 'Ada', last_name: 'Lovelace', email: 'ada@example.com' },
});

export const hookAccepted = z
  .object({
    success: z.literal(true),
    run_id: z.string().uuid().openapi({ description: 'The run: one workflow (hook-run-<run_id>) in Temporal' }),
  })
  .openapi('WebhookAccepted');
