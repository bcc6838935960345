import { z } from 'zod';
import { time } from './common.js';

/**
 * Outcomes per agent, model, trigger, person or week (docs/insights.md): what agents
 * delivered and what it cost, from the event log and the model gateway's usage rows.
 */
export const INSIGHT_GROUPS = ['agent', 'model', 'trigger', 'person', 'week'] as const;

const instant = z.iso.datetime({ offset: true });

/** `from`/`to`: the window of the events' recorded times, [from, to); `as_of`: only what was recorded by then. */
export const InsightsQuery = z.object({
  from: instant.optional(),
  to: instant.optional(),
  group_by: z.enum(INSIGHT_GROUPS).optional(),
  as_of: instant.optional(),
});
export type InsightsQuery = z.infer<typeof InsightsQuery>;

/** An amount of money in one currency (prices are per currency: never summed across them). */
const InsightMoney = z.strictObject({ currency: z.string(), amount: z.number() });

export const InsightRowSchema = z.strictObject({
  /** The group's value (agent name, model, trigger slug, person's user id, week's Monday); null: none (no session, no trigger, a session that named no model). */
  key: z.string().nullable(),
  crs_opened: z.number().int(),
  crs_merged: z.number().int(),
  crs_closed_unmerged: z.number().int(),
  /** merged / (merged + closed unmerged); null when neither happened. */
  merge_rate: z.number().nullable(),
  median_seconds_to_merge: z.number().nullable(),
  review_rounds: z.number().int(),
  checks_failed_first_run: z.number().int(),
  queue_ejections: z.number().int(),
  sessions_without_cr: z.number().int(),
  model_calls: z.number().int(),
  /** Calls of a model without a price: counted in tokens, not in money. */
  unpriced_calls: z.number().int(),
  input_tokens: z.number().int(),
  output_tokens: z.number().int(),
  money: z.array(InsightMoney),
  /** money / merged CRs, per currency; empty when nothing merged. */
  cost_per_merged_cr: z.array(InsightMoney),
});
export type InsightRow = z.infer<typeof InsightRowSchema>;

export const InsightsSchema = z.strictObject({
  scope: z.enum(['project', 'account']),
  id: z.uuid(),
  from: time,
  to: time,
  as_of: time,
  group_by: z.enum(INSIGHT_GROUPS).nullable(),
  groups: z.array(InsightRowSchema),
  total: InsightRowSchema,
});
export type Insights = z.infer<typeof InsightsSchema>;
