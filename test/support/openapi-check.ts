/**
 * Exchanges checked against the server's OpenAPI document (built from contracts/): the
 * operation must exist (method + path template), the request body must fit its schema, the
 * status must be one the operation declares and the body must fit that status's schema.
 * Two users: the CLI's nock fixtures (test/cli/nock-scope.ts: an API change that breaks the
 * CLI's expectations fails the CLI test that relied on it) and every JSON response of a real
 * test server (test/support/response-contract.ts: the document must describe what the
 * server really sends). A small JSON Schema checker for the keywords the generated document
 * uses; an unknown keyword is an error, so the checker cannot silently pass.
 */
import { buildOpenApi } from '../../api/openapi.js';

type Schema = Record<string, unknown>;
interface Operation {
  requestBody?: { content: { 'application/json': { schema: Schema } } };
  responses: Record<string, { content?: { 'application/json': { schema: Schema } } }>;
}

const KNOWN = new Set([
  '$schema', 'type', 'properties', 'required', 'items', 'enum', 'anyOf', 'format', 'pattern', 'minLength', 'maxLength',
  'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'additionalProperties', 'propertyNames', 'default', 'description', 'const',
]);

let doc: { paths: Record<string, Record<string, Operation>> } | undefined;
const document = () => (doc ??= buildOpenApi() as unknown as typeof doc)!;

/** Errors of `value` against `schema`, as "path: problem" strings. */
export function schemaErrors(schema: Schema, value: unknown, at = '$'): string[] {
  const errs: string[] = [];
  for (const k of Object.keys(schema)) if (!KNOWN.has(k)) errs.push(`${at}: schema keyword '${k}' not understood by the checker`);
  if (schema.anyOf) {
    const members = schema.anyOf as Schema[];
    if (!members.some((s) => schemaErrors(s, value, at).length === 0)) {
      // A tagged member (`type` a const, as event histories are) explains itself better than "none".
      const tag = value && typeof value === 'object' ? (value as Record<string, unknown>).type : undefined;
      const tagged = members.find((s) => ((s.properties as Record<string, Schema> | undefined)?.type as Schema | undefined)?.const === tag && tag !== undefined);
      errs.push(...(tagged ? schemaErrors(tagged, value, at) : [`${at}: matches none of anyOf`]));
    }
  }
  if ('const' in schema && value !== schema.const) errs.push(`${at}: expected ${JSON.stringify(schema.const)}`);
  if (schema.enum && !(schema.enum as unknown[]).includes(value)) errs.push(`${at}: ${JSON.stringify(value)} not in ${JSON.stringify(schema.enum)}`);
  if (schema.type !== undefined) {
    const types = Array.isArray(schema.type) ? (schema.type as string[]) : [schema.type as string];
    const actual = value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value;
    const fits = types.some((t) => t === actual || (t === 'integer' && typeof value === 'number' && Number.isInteger(value)) || (t === 'number' && actual === 'number'));
    if (!fits) return [...errs, `${at}: expected ${types.join('|')}, got ${actual}`];
  }
  if (typeof value === 'string') {
    if (typeof schema.minLength === 'number' && value.length < schema.minLength) errs.push(`${at}: shorter than ${schema.minLength}`);
    if (typeof schema.maxLength === 'number' && value.length > schema.maxLength) errs.push(`${at}: longer than ${schema.maxLength}`);
    if (typeof schema.pattern === 'string' && !new RegExp(schema.pattern, 'u').test(value)) errs.push(`${at}: does not match ${schema.pattern}`);
    if (schema.format === 'date-time' && Number.isNaN(Date.parse(value))) errs.push(`${at}: not a date-time`);
    if (schema.format === 'uuid' && !/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(value)) errs.push(`${at}: not a uuid`);
  }
  if (typeof value === 'number') {
    if (typeof schema.minimum === 'number' && value < schema.minimum) errs.push(`${at}: below ${schema.minimum}`);
    if (typeof schema.maximum === 'number' && value > schema.maximum) errs.push(`${at}: above ${schema.maximum}`);
    if (typeof schema.exclusiveMinimum === 'number' && value <= schema.exclusiveMinimum) errs.push(`${at}: not above ${schema.exclusiveMinimum}`);
    if (typeof schema.exclusiveMaximum === 'number' && value >= schema.exclusiveMaximum) errs.push(`${at}: not below ${schema.exclusiveMaximum}`);
  }
  if (Array.isArray(value) && schema.items) value.forEach((v, i) => errs.push(...schemaErrors(schema.items as Schema, v, `${at}[${i}]`)));
  if (value && typeof value === 'object' && !Array.isArray(value)) {
    const obj = value as Record<string, unknown>;
    const props = (schema.properties ?? {}) as Record<string, Schema>;
    for (const r of (schema.required ?? []) as string[]) if (!(r in obj)) errs.push(`${at}: missing required '${r}'`);
    for (const [k, v] of Object.entries(obj)) {
      if (props[k]) errs.push(...schemaErrors(props[k]!, v, `${at}.${k}`));
      else if (schema.additionalProperties === false) errs.push(`${at}: unexpected property '${k}'`);
      else if (schema.additionalProperties && typeof schema.additionalProperties === 'object') errs.push(...schemaErrors(schema.additionalProperties as Schema, v, `${at}.${k}`));
      if (schema.propertyNames) errs.push(...schemaErrors(schema.propertyNames as Schema, k, `${at}{${k}}`));
    }
  }
  return errs;
}

/** The operation for `method` on a concrete `path` (without query), or null. */
export function operationFor(method: string, path: string): { template: string; op: Operation } | null {
  for (const [template, item] of Object.entries(document().paths)) {
    const re = new RegExp(`^${template.replace(/\{\w+\}/g, '[^/]+')}/?$`);
    const op = item[method.toLowerCase()];
    if (op && re.test(path)) return { template, op };
  }
  return null;
}

const parse = (body: unknown): unknown => {
  if (typeof body !== 'string') return body;
  if (body === '') return undefined;
  try {
    return JSON.parse(body);
  } catch {
    return body;
  }
};

/** Problems of one stubbed exchange against the document; [] when it conforms. */
export function contractProblems(ex: { method: string; path: string; requestBody?: unknown; status: number; replyBody?: unknown }): string[] {
  const path = ex.path.replace(/\?.*$/, '');
  const found = operationFor(ex.method, path);
  if (!found) return [`${ex.method} ${path}: no such operation in the OpenAPI document`];
  const where = `${ex.method} ${found.template}`;
  const out: string[] = [];
  const req = parse(ex.requestBody);
  const reqSchema = found.op.requestBody?.content['application/json'].schema;
  if (reqSchema && req !== undefined) out.push(...schemaErrors(reqSchema, req).map((e) => `${where} request ${e}`));
  if (!reqSchema && req !== undefined && req !== '' && JSON.stringify(req) !== '{}') out.push(`${where}: sends a body the operation does not take`);
  const res = found.op.responses[String(ex.status)];
  if (!res) return [...out, `${where}: status ${ex.status} is not declared (declared: ${Object.keys(found.op.responses).join(', ')})`];
  const resSchema = res.content?.['application/json'].schema;
  const body = parse(ex.replyBody);
  if (resSchema && body !== undefined) out.push(...schemaErrors(resSchema, body).map((e) => `${where} ${ex.status} reply ${e}`));
  if (!resSchema && body !== undefined && body !== '') out.push(`${where}: status ${ex.status} declares no body, but one came`);
  return out;
}
