import type { z } from 'zod';

/** The `{type, data}` discriminated union of a catalog of event schemas, one member per type. */
export type EventOf<S extends Record<string, z.ZodType>> = {
  [K in keyof S & string]: { type: K; data: z.infer<S[K]> };
}[keyof S & string];

/**
 * What an aggregate's event catalog answers about a stored event: whether its type is one
 * of the catalog's, and the event validated on the way in from the log (the place for
 * upcasters).
 */
export function eventCatalog<S extends Record<string, z.ZodType>>(aggregate: string, schemas: S) {
  const isType = (t: string): t is keyof S & string => Object.hasOwn(schemas, t);
  const parse = (e: { type: string; data: unknown }): EventOf<S> => {
    if (!isType(e.type)) throw new Error(`unknown ${aggregate} event type: ${e.type}`);
    return { type: e.type, data: schemas[e.type]!.parse(e.data) } as EventOf<S>;
  };
  return { isType, parse };
}
