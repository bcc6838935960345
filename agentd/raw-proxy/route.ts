import { USER_CONTEXT_HEADER } from '../auth.js';
import { authorizeProxy, parseTarget, type ProxyTarget } from '../proxy-auth.js';
import { hasToken, type RequestHead } from './head.js';
import type { RawProxyDeps } from './connection.js';

/** Where the raw proxy sends a request it serves itself. */
export interface Route {
  port: number;
  /** Path and query for the upstream. */
  path: string;
  /** Set-Cookie for the response (a context given as `?svc_ctx=`). */
  setCookie: string | undefined;
  /** The client said `Connection: close`. */
  close: boolean;
}

/**
 * The raw proxy's decision on one request head: a `Route`, or null when the request is
 * the http server's to answer (the control surface, HTTP/1.0, CONNECT, a context refused
 * or given twice, the runtime not running), where it is answered exactly as before.
 */
export function routeRequest(head: RequestHead, deps: RawProxyDeps): Route | null {
  if (head.minor !== 1 || head.method === 'CONNECT' || deps.isLocal(head.target)) return null;
  let context: string | undefined;
  let cookie: string | undefined;
  let proto: string | undefined;
  let contexts = 0;
  let close = false;
  for (let i = 0; i < head.names.length; i++) {
    const n = head.names[i]!;
    const v = head.values[i]!;
    if (n === USER_CONTEXT_HEADER) {
      context = v;
      contexts++;
    } else if (n === 'cookie') cookie = cookie === undefined ? v : `${cookie}; ${v}`;
    else if (n === 'x-forwarded-proto') proto ??= v;
    else if (n === 'connection' && hasToken(v, 'close')) close = true;
  }
  // More than one context header: the http server joins them and refuses the result.
  if (contexts > 1) return null;
  let target: ProxyTarget;
  let setCookie: string | undefined;
  try {
    target = parseTarget(head.target, deps.runtimePort, deps.ownPort);
    const headers = { [USER_CONTEXT_HEADER]: context, cookie, 'x-forwarded-proto': proto };
    setCookie = authorizeProxy({ url: head.target, headers }, target, deps.token, deps.now()).setCookie;
  } catch {
    // Every refusal (and the 503 below) is the http server's to word, as it always has.
    return null;
  }
  if (target.kind === 'runtime' && deps.agentState() !== 'running') return null;
  return { port: target.port, path: target.path, setCookie, close };
}
