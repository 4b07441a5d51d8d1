/**
 * The speech settings' one reading of the environment: each engine names its variables in a
 * zod object, empty or blank counts as unset, and the first bad value is reported with its
 * variable and what was given (SpeechConfigError at start-up).
 */
import { z } from 'zod';

/** Reports a bad setting or a missing install, naming the variable; throws. */
export type SettingFailure = (variable: string, message: string) => never;

export const wholeNumber = (min: number, max: number) =>
  z.coerce.number({ message: 'must be a number' }).int('must be a whole number').min(min, `must be at least ${min}`).max(max, `must be at most ${max}`);

/** The variables `schema` names, read from `config`; `fail` gets the first bad one as `<VARIABLE> <problem> (got "<value>")`. */
export function readSpeechSettings<S extends z.ZodObject>(schema: S, config: Readonly<Record<string, string | undefined>>, fail: SettingFailure): z.infer<S> {
  const given = Object.fromEntries(
    Object.keys(schema.shape).flatMap((name) => {
      const value = config[name]?.trim();
      return value ? [[name, value]] : [];
    }),
  );
  const parsed = schema.safeParse(given);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const variable = String(issue.path[0]);
  return fail(variable, `${variable} ${issue.message} (got "${given[variable]}")`);
}
