import { z } from 'zod';

/** The operations endpoints: `/healthz` (process up), `/readyz` (database and queue reachable). */
export const HealthSchema = z.strictObject({ status: z.literal('ok') });
export const ReadySchema = z.strictObject({
  status: z.enum(['ready', 'not ready']),
  checks: z.strictObject({ database: z.enum(['ok', 'unreachable']), queue: z.enum(['ok', 'unreachable']).optional() }),
});
