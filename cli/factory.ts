/**
 * What every command gets injected (gh's cmdutil.Factory): IO, environment, cwd, the HTTP
 * transport, the config file path, a browser opener and a prompter. Nothing in a command
 * reaches for a global.
 */
import type { FetchLike } from './http.js';
import type { IOStreams } from './iostreams.js';
import type { Prompter } from './prompt.js';

export type Env = Readonly<Record<string, string | undefined>>;

export interface Factory {
  io: IOStreams;
  env: Env;
  cwd: string;
  fetch: FetchLike;
  configPath: string;
  version: string;
  openBrowser(url: string): Promise<void>;
  prompter: Prompter;
  now(): Date;
  /** Runs `fn` on each Ctrl-C (SIGINT) until the returned function is called. */
  onInterrupt?(fn: () => void): () => void;
}
