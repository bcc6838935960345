/**
 * How the dashboard and the CLI write what something cost (docs/models.md "Cost"): money
 * per currency, tokens no price covered, and wall time.
 */

/** `USD 0.0123 + EUR 1.50`; `–` when nothing was priced. Small amounts keep 4 significant digits. */
export function moneyText(money: { currency: string; amount: number }[]): string {
  if (!money.length) return '–';
  return money.map((m) => `${m.currency} ${amountText(m.amount)}`).join(' + ');
}

function amountText(v: number): string {
  if (v === 0) return '0.00';
  if (Math.abs(v) >= 0.01) return v.toFixed(2);
  return v.toPrecision(4).replace(/0+$/, '').replace(/\.$/, '');
}

/** `42 s`, `3 min 5 s`, `2 h 4 min`. */
export function secondsText(s: number): string {
  const t = Math.round(s);
  if (t < 60) return `${t} s`;
  if (t < 3600) return `${Math.floor(t / 60)} min ${t % 60} s`;
  return `${Math.floor(t / 3600)} h ${Math.floor((t % 3600) / 60)} min`;
}
