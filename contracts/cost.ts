import { z } from 'zod';
import { uuid } from './common.js';

/**
 * What sessions and change requests cost (docs/models.md "Cost"). Money is per currency
 * (each model call keeps the currency it was priced in); tokens of calls to a model
 * without a price are counted and flagged (`unpriced_tokens`, `priced: false`), never
 * given a price. Seconds are wall time; `cpu_seconds` is null unless the sandbox provider
 * reported it (docker, at a sandbox's stop), and always null for a CR.
 */
export const MoneySchema = z.array(z.strictObject({ currency: z.string(), amount: z.number() }));

const tokens = { input_tokens: z.number().int(), output_tokens: z.number().int(), requests: z.number().int() };
const spent = { ...tokens, money: MoneySchema, unpriced_tokens: z.number().int() };

/** One model's calls: `priced` false when any of them had no price. */
export const ModelCostSchema = z.strictObject({ model: z.string(), ...spent, priced: z.boolean() });

/** A session's calls and sandbox time that belong to one CR (`cr_id` null: unattributed). */
export const ChangeRequestShareSchema = z.strictObject({
  cr_id: uuid.nullable(),
  number: z.number().int().nullable(),
  ...spent,
  sandbox_seconds: z.number(),
});

/** `GET …/change-requests/:crId/cost`. */
export const CrCostSchema = z.strictObject({
  cr_id: uuid,
  number: z.number().int(),
  /** The session whose branch is the CR's head (an agent's CR); null: none. */
  session_id: z.string().nullable(),
  ...spent,
  by_model: z.array(ModelCostSchema),
  /** Its share of the session's sandbox running time. */
  sandbox_seconds: z.number(),
  cpu_seconds: z.number().nullable(),
  /** Its check runs' durations, summed (a run still going counts until now). */
  check_seconds: z.number(),
  check_runs: z.array(z.strictObject({ run_id: uuid, name: z.string(), seconds: z.number(), running: z.boolean() })),
  /** The session's agent uses a model of its own provider (the project's key), which bypasses the gateway: its calls are not counted. */
  unmetered: z.boolean(),
});
export type CrCost = z.infer<typeof CrCostSchema>;
export const OneCrCost = z.strictObject({ cost: CrCostSchema });
