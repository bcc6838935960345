import type { SessionErrorInfo, StopReason } from './state.js';

/** The clock and the actor arrive on every command, so `decide` stays pure. */
export interface CommandMeta {
  actor: string;
  now: Date;
}

type Cmd<T extends string, D = undefined> = D extends undefined ? { type: T; meta: CommandMeta } : { type: T; data: D; meta: CommandMeta };

export type CreateSession = Cmd<
  'CreateSession',
  {
    session_id: string;
    account_id: string;
    project_id: string;
    base_ref: string;
    agent: string;
    model: string | null;
    prompt: string | null;
    trigger: string | null;
  }
>;
export type RecordBranchCut = Cmd<'RecordBranchCut', { base_commit_sha: string }>;
export type RequestSandbox = Cmd<'RequestSandbox', { sandbox_id: string; provider: string }>;
export type RecordSandboxActive = Cmd<'RecordSandboxActive', { sandbox_id: string; url: string; ref: string }>;
export type MarkRunning = Cmd<'MarkRunning', { sandbox_id: string }>;
/** Provisioning failed: the session ends `failed`, its sandbox (if any) `error`. */
export type FailSession = Cmd<'FailSession', { error: Omit<SessionErrorInfo, 'at'> }>;
export type StopSession = Cmd<'StopSession', { reason: StopReason }>;
/** The provider freed the sandbox (after a stop, restart or remove). */
export type RecordSandboxStopped = Cmd<'RecordSandboxStopped', { sandbox_id: string }>;
/** The egress proxy refused one of the sandbox's connections (throttled by the caller). */
export type RecordEgressRefused = Cmd<'RecordEgressRefused', { sandbox_id: string; host: string; port: number; reason: string }>;
export type RestartSession = Cmd<'RestartSession'>;
export type RemoveSession = Cmd<'RemoveSession'>;
export type RecordActivity = Cmd<'RecordActivity', { min_interval_ms: number }>;
export type MarkAgentReady = Cmd<'MarkAgentReady', { sandbox_id: string }>;
export type FailAgent = Cmd<'FailAgent', { sandbox_id: string; error: Omit<SessionErrorInfo, 'at'> }>;

export type RecordPaused = Cmd<'RecordPaused', { wip_sha: string | null; skipped: { path: string; bytes: number; reason: string }[]; conversation: boolean }>;
export type RecordResumed = Cmd<'RecordResumed', { sandbox_id: string; wip_sha: string | null; conversation: 'restored' | 'version_mismatch' | 'none' }>;

export type SessionCommand =
  | RecordPaused
  | RecordResumed
  | CreateSession
  | RecordBranchCut
  | RequestSandbox
  | RecordSandboxActive
  | MarkRunning
  | FailSession
  | StopSession
  | RecordSandboxStopped
  | RecordEgressRefused
  | RestartSession
  | RemoveSession
  | RecordActivity
  | MarkAgentReady
  | FailAgent;
