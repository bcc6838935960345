/**
 * What one sandbox's processes may use, capped by the server (SVC_SANDBOX_MAX_*): a
 * project's `[sandbox] memory_mb` / `cpus` are taken up to the cap, and the cap is the
 * default when the manifest says nothing. Each provider applies them its own way:
 *   docker      --memory (swap included) --cpus --pids-limit --ulimit nofile,nproc
 *   kubernetes  resources.limits cpu/memory (requests: the manifest's)
 *   bwrap       RLIMIT_NOFILE/RLIMIT_NPROC on the launch (infra/sandbox/launch-limits.ts),
 *               and a cgroup of its own (memory, pids, cpu) where one can be made, else nice 19
 *   process     RLIMIT_NOFILE/RLIMIT_NPROC and nice 19 (it isolates nothing else)
 */
import { readHardLimit } from '../../lib/proc.js';
import type { SandboxSpec } from './port.js';
import { which } from './provider-util.js';

export interface SandboxCaps {
  memoryMb: number;
  cpus: number;
  pids: number;
  nofile: number;
  nproc: number;
}

export function sandboxCapsOf(config: {
  SVC_SANDBOX_MAX_MEMORY_MB: number;
  SVC_SANDBOX_MAX_CPUS: number;
  SVC_SANDBOX_MAX_PIDS: number;
  SVC_SANDBOX_MAX_NOFILE: number;
  SVC_SANDBOX_MAX_NPROC: number;
}): SandboxCaps {
  return {
    memoryMb: config.SVC_SANDBOX_MAX_MEMORY_MB,
    cpus: config.SVC_SANDBOX_MAX_CPUS,
    pids: config.SVC_SANDBOX_MAX_PIDS,
    nofile: config.SVC_SANDBOX_MAX_NOFILE,
    nproc: config.SVC_SANDBOX_MAX_NPROC,
  };
}

/** The manifest's memory and CPUs, each at most the cap, the cap when unset. */
export function cappedResources(spec: Pick<SandboxSpec, 'resources'>, caps: SandboxCaps): { memoryMb: number; cpus: number } {
  const memoryMb = Math.min(spec.resources?.memoryMb ?? caps.memoryMb, caps.memoryMb);
  const cpus = Math.min(spec.resources?.cpus ?? caps.cpus, caps.cpus);
  return { memoryMb, cpus };
}

/**
 * A launch under RLIMIT_NOFILE/RLIMIT_NPROC (and nice 19 when asked): util-linux's
 * `prlimit … -- [nice -n 19] file args` (each execs the next: the pid and every inherited
 * descriptor, bwrap's status fd included, stay the caller's). Without prlimit, POSIX sh's
 * `ulimit -n` (the process count has no portable sh spelling: bash -u, dash -p).
 */
export function limitedLaunch(file: string, args: readonly string[], wanted: Pick<SandboxCaps, 'nofile' | 'nproc'>, opts: { nice: boolean; prlimit: string | undefined }): { file: string; args: string[] } {
  // Never above the server's own hard limits: raising them needs a privilege the server may lack.
  const caps = { nofile: Math.min(wanted.nofile, readHardLimit('Max open files') ?? Infinity), nproc: Math.min(wanted.nproc, readHardLimit('Max processes') ?? Infinity) };
  // Where `nice` exists (a minimal server image may have none: the sandbox must start anyway).
  const nice = opts.nice ? which('nice') : undefined;
  const niced = nice ? [nice, '-n', '19', file, ...args] : [file, ...args];
  if (opts.prlimit) return { file: opts.prlimit, args: [`--nofile=${caps.nofile}:${caps.nofile}`, `--nproc=${caps.nproc}:${caps.nproc}`, '--', ...niced] };
  return { file: '/bin/sh', args: ['-c', `ulimit -n ${caps.nofile} && exec "$@"`, 'svc-sandbox', ...niced] };
}
