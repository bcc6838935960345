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
 * In-process failpoints for tests: a test registers what happens
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

/**
 * Spawn faults for tests: a child process started through lib/spawn.ts as `kind` fails as
 * if the system refused it (`EMFILE`, `ENOMEM`, `EAGAIN`), either registered in-process
 * (`setSpawnFault`) or, for a server a test spawns, `SVC_FAILPOINTS=spawn.git=EMFILE`.
 * Unset: one map lookup and one env read.
 */
const spawnFaults = new Map<string, string>();

export function setSpawnFault(kind: string, code: 'EMFILE' | 'ENOMEM' | 'EAGAIN'): () => void {
  spawnFaults.set(kind, code);
  return () => {
    if (spawnFaults.get(kind) === code) spawnFaults.delete(kind);
  };
}

export function spawnFault(kind: string): string | undefined {
  const own = spawnFaults.get(kind);
  if (own) return own;
  const set = process.env.SVC_FAILPOINTS;
  if (!set) return undefined;
  for (const entry of set.split(',')) {
    const [name, code] = entry.split('=');
    if (name === `spawn.${kind}` || name === 'spawn.*') return code || 'EMFILE';
  }
  return undefined;
}
