import { parse as parseToml } from 'smol-toml';
import { isDeepStrictEqual } from 'node:util';

/**
 * Sets `enabled` of one `[[triggers]]` entry by editing one line of the file, so the
 * formatting and comments around it stay as they were: the existing `enabled = ...` line
 * of that entry is rewritten in place (its indentation and trailing comment kept), or one
 * `enabled = ...` line is added after the entry's `slug` line. The result is parsed back
 * and must equal the original with only that value changed; anything this line editor
 * cannot handle (a trigger written as an inline table, say) is refused, never guessed.
 */
export type EditOutcome = { ok: true; text: string; changed: boolean } | { ok: false; reason: string };

const HEADER = /^\s*\[/;
const TRIGGERS_HEADER = /^\s*\[\[\s*triggers\s*\]\]\s*(#.*)?$/;
const ENABLED = /^(\s*enabled\s*=\s*)(true|false)(\s*(#.*)?)$/;

export function setTriggerEnabled(text: string, slug: string, enabled: boolean): EditOutcome {
  let before: Record<string, unknown>;
  try {
    before = parseToml(text) as Record<string, unknown>;
  } catch {
    return { ok: false, reason: 'svc.toml is not valid TOML' };
  }
  const triggers = Array.isArray(before.triggers) ? (before.triggers as Array<Record<string, unknown>>) : [];
  const index = triggers.findIndex((t) => t && t.slug === slug);
  if (index < 0) return { ok: false, reason: `no trigger '${slug}' in svc.toml` };
  if ((triggers[index]!.enabled ?? true) === enabled) return { ok: true, text, changed: false };

  const eol = text.includes('\r\n') ? '\r\n' : '\n';
  const lines = text.split(/\r?\n/);
  // The n-th `[[triggers]]` header starts the n-th entry.
  let seen = -1;
  let start = -1;
  for (let i = 0; i < lines.length; i++) {
    if (TRIGGERS_HEADER.test(lines[i]!) && ++seen === index) {
      start = i;
      break;
    }
  }
  if (start < 0) return { ok: false, reason: `trigger '${slug}' is not written as a [[triggers]] table` };
  let end = lines.length;
  for (let i = start + 1; i < lines.length; i++) {
    if (HEADER.test(lines[i]!)) {
      end = i;
      break;
    }
  }
  const value = enabled ? 'true' : 'false';
  let edited = false;
  for (let i = start + 1; i < end; i++) {
    const m = ENABLED.exec(lines[i]!);
    if (m) {
      lines[i] = `${m[1]}${value}${m[3]}`;
      edited = true;
      break;
    }
  }
  if (!edited) {
    const slugLine = lines.slice(start + 1, end).findIndex((l) => /^\s*slug\s*=/.test(l));
    if (slugLine < 0) return { ok: false, reason: `could not find the slug line of trigger '${slug}'` };
    const at = start + 1 + slugLine;
    const indent = /^\s*/.exec(lines[at]!)![0];
    lines.splice(at + 1, 0, `${indent}enabled = ${value}`);
  }
  const next = lines.join(eol);
  let after: Record<string, unknown>;
  try {
    after = parseToml(next) as Record<string, unknown>;
  } catch {
    return { ok: false, reason: 'the edit would not leave valid TOML; edit svc.toml by hand' };
  }
  const expected = structuredClone(before);
  (expected.triggers as Array<Record<string, unknown>>)[index]!.enabled = enabled;
  if (!isDeepStrictEqual(normalise(after), normalise(expected))) {
    return { ok: false, reason: `svc.toml is laid out in a way this edit cannot follow; set enabled on '${slug}' by hand` };
  }
  return { ok: true, text: next, changed: true };
}

// smol-toml returns dates as its own class; compare through JSON.
const normalise = (v: unknown) => JSON.parse(JSON.stringify(v)) as unknown;
