/**
 * How insights numbers read, the same in `svc insights` and on the dashboard's insights
 * page: both show the API's numbers through these, so a person sees one figure everywhere.
 */

/** 0.6667 -> "66.67%"; null (nothing merged or closed) -> "-". */
export const formatRate = (rate: number | null): string => (rate === null ? '-' : `${(Math.round(rate * 10_000) / 100).toFixed(2)}%`);

/** Seconds as the largest two units: "45m 0s", "2h 0m", "1d 3h"; null -> "-". */
export function formatDuration(seconds: number | null): string {
  if (seconds === null) return '-';
  const s = Math.round(seconds);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
  return `${Math.floor(s / 86_400)}d ${Math.floor((s % 86_400) / 3600)}h`;
}

/** Amounts per currency, never summed across currencies: "0.0375 USD", "1.2 EUR + 0.5 USD"; none -> "-". */
export const formatMoney = (amounts: { currency: string; amount: number }[]): string =>
  amounts.length === 0 ? '-' : amounts.map((a) => `${a.amount} ${a.currency}`).join(' + ');

/** A group's key as a person reads it (null: no such thing, e.g. no trigger). */
export const formatKey = (key: string | null, groupBy: string | null): string => (key !== null ? key : groupBy === 'trigger' ? '(none: by hand)' : groupBy ? '(none)' : 'total');

/** Durations like the CLI's `--since 30d`: N followed by h, d or w. */
export function parseSince(text: string): number | null {
  const m = /^(\d{1,5})([hdw])$/.exec(text.trim());
  if (!m) return null;
  const n = Number(m[1]);
  return n * { h: 3_600_000, d: 86_400_000, w: 604_800_000 }[m[2] as 'h' | 'd' | 'w'];
}
