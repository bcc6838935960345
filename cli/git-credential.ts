#!/usr/bin/env node
/**
 * The git credential helper `svc ship` configures for its `svc` remote:
 *   credential.<repo url>.helper = !'<node>' '<this file>' <host name>
 * git appends the operation (`get`, `store`, `erase`). For `get` it prints
 * `username=x-access-token` and the token the CLI holds for that host (SVC_CLI_TOKEN /
 * SVC_EXECUTOR_TOKEN first, as every command does), so the token never lands in
 * `.git/config`. Prints nothing (git then falls back) when it has no token.
 */
import { homedir } from 'node:os';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { configPath, readConfig } from './config.js';
import { envToken, hostView } from './hosts.js';

export async function credential(hostName: string | undefined, op: string | undefined, env: NodeJS.ProcessEnv, file: string): Promise<string> {
  if (op !== 'get' || !hostName) return '';
  let token = envToken(env)?.token;
  if (!token) {
    try {
      token = hostView(await readConfig(file), hostName).token;
    } catch {
      token = undefined;
    }
  }
  return token ? `username=x-access-token\npassword=${token}\n` : '';
}

/** The helper value for git config: absolute node and script paths, single-quoted for sh. */
export function helperCommand(hostName: string): string {
  const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  return `!${q(process.execPath)} ${q(fileURLToPath(import.meta.url))} ${q(hostName)}`;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    readFileSync(0); // git writes the request; it is not needed, but must be read
  } catch {
    /* no stdin */
  }
  credential(process.argv[2], process.argv[3], process.env, configPath(process.env, homedir())).then(
    (out) => process.stdout.write(out),
    () => undefined,
  );
}
