/**
 * Failpoints for crash tests: `SVC_FAILPOINTS=merge.after-publish` makes the process kill
 * itself (SIGKILL, no cleanup) when it reaches that point, so a test can prove recovery
 * from a crash at exactly that step. Unset in production: a no-op lookup.
 */
export function failpoint(name: string): void {
  const set = process.env.SVC_FAILPOINTS;
  if (set && set.split(',').includes(name)) process.kill(process.pid, 'SIGKILL');
}
