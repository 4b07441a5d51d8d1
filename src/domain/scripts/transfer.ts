/**
 * The transfer step's pure parts (docs/scripts.md, "Transfer"): who a target is, and how the
 * simulator's person answers. No zod here: the workflow bundle imports it.
 */

/** The simulator's person: answers unless the target's last four digits name a refusal (docs/calls.md, "Simulated outcomes"). */
const SIMULATED_TRANSFER_REFUSALS: Record<string, { reason: string; status: number }> = {
  '0001': { reason: 'the person did not answer', status: 408 },
  '0003': { reason: 'the person declined (busy)', status: 486 },
  '0005': { reason: 'the person could not be reached', status: 480 },
};

/** The digits of a target: an E.164 number's, or a SIP URI's user part's. */
function targetDigits(to: string): string {
  const user = /^sips?:/i.test(to) ? (to.replace(/^sips?:/i, '').split('@')[0] ?? '') : to;
  return user.replace(/\D/g, '');
}

/** How the simulated person answers a transfer to `to`: reached, or why not. */
export function simulatedTransferAnswer(to: string): { reached: true } | { reached: false; reason: string; status: number } {
  const refusal = SIMULATED_TRANSFER_REFUSALS[targetDigits(to).slice(-4)];
  return refusal ? { reached: false, ...refusal } : { reached: true };
}
