/**
 * Failpoints for crash tests: `SVC_FAILPOINTS=merge.after-publish` makes the process kill
 * itself (SIGKILL, no cleanup) when it reaches that point, so a test can prove recovery
 * from a crash at exactly that step. Unset in production: a no-op lookup.
 */
export function failpoint(name: string): void {
  const set = process.env.SVC_FAILPOINTS;
  if (set && set.split(',').includes(name)) process.kill(process.pid, 'SIGKILL');
}

/**
 * In-process failpoints for tests (hardening, issue 15): a test registers what happens
 * when the code reaches `name` (throw, wait for a signal, report that it was reached), and
 * the code awaits `failpointAsync(name)` there. Unregistered: one map lookup.
 */
type FailpointAction = () => void | Promise<void>;
const actions = new Map<string, FailpointAction>();

export function setFailpoint(name: string, action: FailpointAction): () => void {
  actions.set(name, action);
  return () => {
    if (actions.get(name) === action) actions.delete(name);
  };
}

export async function failpointAsync(name: string): Promise<void> {
  failpoint(name);
  const action = actions.get(name);
  if (action) await action();
}
