/**
 * The agent runtime's environment: the daemon's own environment at boot (the injected
 * sandbox variables and project secrets), changed by `POST /svc/env`, plus the two
 * variables the daemon owns (HOME and the config dir), which callers cannot override.
 */
export const DAEMON_OWNED_VARS = ['HOME', 'OPENCODE_CONFIG_DIR', 'OPENCODE_CONFIG_CONTENT'] as const;

export class RuntimeEnv {
  private readonly vars: Map<string, string>;

  constructor(
    base: NodeJS.ProcessEnv,
    private readonly owned: () => { HOME: string; OPENCODE_CONFIG_DIR: string; OPENCODE_CONFIG_CONTENT?: string },
  ) {
    this.vars = new Map(Object.entries(base).filter((e): e is [string, string] => typeof e[1] === 'string'));
  }

  apply(set: Record<string, string>, unset: string[]): void {
    for (const name of unset) this.vars.delete(name);
    for (const [name, value] of Object.entries(set)) this.vars.set(name, value);
  }

  has(name: string): boolean {
    return this.vars.has(name);
  }

  snapshot(): NodeJS.ProcessEnv {
    const owned = this.owned();
    const vars = Object.fromEntries(this.vars);
    // The daemon's config content or none: never one the environment carried in.
    delete vars.OPENCODE_CONFIG_CONTENT;
    if (owned.OPENCODE_CONFIG_CONTENT === undefined) delete owned.OPENCODE_CONFIG_CONTENT;
    return { ...vars, ...owned };
  }
}
