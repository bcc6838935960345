import type { ServiceWiring } from './index.js';
import { loadSecretKey } from '../../infra/secret-box.js';
import { mintPreviewCode, previewCookieKey, projectOfSession, redeemPreviewCode } from '../previews/grants.js';
import { mintCloneCredential } from '../sessions/credentials.js';
import type { SessionDeps } from '../sessions/deps.js';
import {
  controlCall, createSession, findSession, listSessions, liveTarget, removeSession, restartSession, sandboxesNotLive, sessionDetail, sessionHistory, stopSession, touchSession,
} from '../sessions/service.js';
import { refreshSession } from '../sessions/refresh.js';
import { assertPromptable } from '../sessions/prompt-guard.js';
import { repoUrlOf } from '../sessions/sandbox-env.js';
import { acceptCheckpointStream, checkpointBodyLimit, restoreFrame, savedSummary } from '../sessions/saved-state.js';
import { cookieKey, sessionStore, type SessionStore } from '../dashboard/sessions.js';
import { bind } from './bind.js';

/** Once per process, on first use: a key derived from the server's secret key. */
function once<T>(make: () => Promise<T>): () => Promise<T> {
  let p: Promise<T> | undefined;
  return () => (p ??= make());
}

/** Previews and apps on their own origins: one-time codes, the cookie key. */
export function previewServices(w: ServiceWiring) {
  const serverKey = once(() => loadSecretKey({ envKey: w.config.SVC_SECRET_KEY, dataDir: w.config.dataDir }));
  return {
    cookieKey: once(() => serverKey().then(previewCookieKey)),
    mintCode: bind(w.db, mintPreviewCode),
    redeemCode: bind(w.db, redeemPreviewCode),
    projectOfSession: bind(w.db, projectOfSession),
    /** The dashboard's cookie sessions (one store per process). */
    dashboardSessions: once((): Promise<SessionStore> => serverKey().then((key) => sessionStore(w.db, cookieKey(key), w.secrets))),
  };
}

/** What sandboxes call and the API checks about them, beside the session service itself. */
export function sandboxServices(w: ServiceWiring) {
  return {
    mintCloneCredential: bind(w.db, mintCloneCredential),
    savedSummary: (sessionId: string) => savedSummary({ db: w.db }, sessionId),
    notLive: bind(w.db, sandboxesNotLive),
  };
}

/** The session service with its dependencies bound (absent where this process runs no sessions: the routes answer 503). */
export function sessionServices(s: SessionDeps) {
  return {
    list: bind(s, listSessions),
    create: bind(s, createSession),
    detail: bind(s, sessionDetail),
    history: bind(s, sessionHistory),
    find: bind(s, findSession),
    stop: bind(s, stopSession),
    restart: bind(s, restartSession),
    remove: bind(s, removeSession),
    refresh: bind(s, refreshSession),
    /** A prompt only to a session whose model is still offered (409 otherwise). */
    assertPromptable: bind(s, assertPromptable),
    /** A call to the session's daemon (prompt, abort). */
    control: bind(s, controlCall),
    /** Where a running session's daemon answers, for the proxies. */
    liveTarget: bind(s, liveTarget),
    touch: bind(s, touchSession),
    acceptCheckpoint: bind(s, acceptCheckpointStream),
    /** The largest checkpoint body this server reads (from SVC_SESSION_WIP_MAX_BYTES). */
    checkpointBodyLimit: () => checkpointBodyLimit(s.config),
    restoreFrame: bind(s, restoreFrame),
    /** The clone URL a sandbox gets for a project, and the API base it reaches. */
    repoUrlOf: bind(s, repoUrlOf),
    apiUrl: () => s.apiUrl(),
  };
}
export type SessionServices = ReturnType<typeof sessionServices>;
