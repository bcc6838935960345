/** The CR number a reference names (`#12` or `12`, at most a Postgres integer), or null (a uuid, or no CR reference). */
export function crNumberOf(ref: string): number | null {
  const num = /^#?([1-9][0-9]{0,9})$/.exec(ref);
  return num && Number(num[1]) <= 2_147_483_647 ? Number(num[1]) : null;
}
