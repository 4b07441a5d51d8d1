import { z } from 'zod';

/**
 * The script format (docs/scripts.md). Minimal for now: a name and an ordered list of
 * steps with unique ids; the script runtime gives each step type its own schema.
 */
export const scriptStepSchema = z.looseObject({
  id: z.string().min(1),
  type: z.string().min(1),
});

export const scriptDefinitionSchema = z.object({
  name: z.string().min(1).max(200),
  description: z.string().optional(),
  objectives: z.array(z.string().min(1)).default([]),
  steps: z
    .array(scriptStepSchema)
    .min(1)
    .superRefine((steps, ctx) => {
      const seen = new Set<string>();
      steps.forEach((step, i) => {
        if (seen.has(step.id)) ctx.addIssue({ code: 'custom', path: [i, 'id'], message: `duplicate step id ${step.id}` });
        seen.add(step.id);
      });
    }),
});

export type ScriptDefinition = z.infer<typeof scriptDefinitionSchema>;

/** Validates a script; the error names the step and field, e.g. "steps[2].id: ...". */
export function parseScriptDefinition(input: unknown): { ok: true; script: ScriptDefinition } | { ok: false; message: string } {
  const parsed = scriptDefinitionSchema.safeParse(input);
  if (parsed.success) return { ok: true, script: parsed.data };
  const message = parsed.error.issues
    .map((i) => `${i.path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`)).join('').replace(/^\./, '') || 'script'}: ${i.message}`)
    .join('; ');
  return { ok: false, message };
}
