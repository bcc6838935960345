import { bearerMatches, stripCookie, USER_CONTEXT_COOKIE, USER_CONTEXT_HEADER } from '../auth.js';
import { HOP_BY_HOP } from '../proxy-auth.js';
import { hasToken, type RequestHead, type ResponseHead } from './head.js';

/**
 * The raw proxy's header rewriting, the same rules as `upstreamRequestHeaders` /
 * `downstreamResponseHeaders` for the http-module path, on header lists instead of
 * objects: hop-by-hop headers but Transfer-Encoding (and those the Connection header names) dropped, the
 * daemon's credentials (signed context, its cookie, the control bearer) never forwarded,
 * X-Forwarded-* added. Repeated headers are forwarded as repeated lines; Cookie and
 * X-Forwarded-For are joined the way Node joins them.
 */
export function upstreamHead(head: RequestHead, path: string, token: string, remote: string | undefined, upgrade: string | undefined): string {
  const { names, values } = head;
  let listed: string[] | null = null;
  for (let i = 0; i < names.length; i++) {
    if (names[i] !== 'connection') continue;
    const v = values[i]!;
    if (!/^\s*(keep-alive|close)\s*$/i.test(v)) {
      for (const t of v.split(',')) {
        const name = t.trim().toLowerCase();
        if (name) (listed ??= []).push(name);
      }
    }
  }
  let out = `${head.method} ${path} HTTP/1.1\r\n`;
  let cookie: string | undefined;
  let forwardedFor: string | undefined;
  let host: string | undefined;
  let forwardedHost = false;
  let forwardedProto = false;
  for (let i = 0; i < names.length; i++) {
    const name = names[i]!;
    const value = values[i]!;
    // The framing headers always stay, whatever Connection lists: the body bytes are
    // forwarded as they came, so the upstream must delimit them exactly as we did.
    const framing = name === 'transfer-encoding' || name === 'content-length';
    if (!framing && (HOP_BY_HOP.has(name) || name === USER_CONTEXT_HEADER || (listed !== null && listed.includes(name)))) continue;
    switch (name) {
      case 'cookie':
        cookie = cookie === undefined ? value : `${cookie}; ${value}`;
        continue;
      case 'x-forwarded-for':
        forwardedFor = forwardedFor === undefined ? value : `${forwardedFor}, ${value}`;
        continue;
      case 'authorization':
        if (bearerMatches(value, token)) continue;
        break;
      case 'host':
        host = value;
        break;
      case 'x-forwarded-host':
        forwardedHost ||= value !== '';
        break;
      case 'x-forwarded-proto':
        forwardedProto ||= value !== '';
        break;
    }
    out += `${name}: ${value}\r\n`;
  }
  if (cookie !== undefined) {
    const kept = stripCookie(cookie, USER_CONTEXT_COOKIE);
    if (kept !== undefined) out += `cookie: ${kept}\r\n`;
  }
  if (remote) out += `x-forwarded-for: ${forwardedFor ? `${forwardedFor}, ${remote}` : remote}\r\n`;
  if (host && !forwardedHost) out += `x-forwarded-host: ${host}\r\n`;
  if (!forwardedProto) out += 'x-forwarded-proto: http\r\n';
  if (upgrade !== undefined) out += `connection: Upgrade\r\nupgrade: ${upgrade}\r\n`;
  return out + '\r\n';
}

/**
 * The client's response head: the upstream's status and headers minus hop-by-hop ones
 * (Transfer-Encoding stays: the chunked bytes pass through as they are), plus the
 * preview cookie and `connection: close` when this is the connection's last response.
 */
export function downstreamHead(head: ResponseHead, setCookie: string | undefined, close: boolean): string {
  let out = head.statusLine.charCodeAt(7) === 49 /* 1 */ ? head.statusLine : `HTTP/1.1${head.statusLine.slice(8)}`;
  out += '\r\n';
  const { names, lines } = head;
  for (let i = 0; i < names.length; i++) {
    const name = names[i]!;
    if (HOP_BY_HOP.has(name) && name !== 'transfer-encoding') continue;
    out += `${lines[i]!}\r\n`;
  }
  if (setCookie !== undefined) out += `set-cookie: ${setCookie}\r\n`;
  if (close) out += 'connection: close\r\n';
  return out + '\r\n';
}

/** A 101's head goes to the client as it came (Connection and Upgrade are the point). */
export function switchingHead(head: ResponseHead): string {
  let out = `${head.statusLine}\r\n`;
  for (const line of head.lines) out += `${line}\r\n`;
  return out + '\r\n';
}

/** Whether a request asks to upgrade (Connection lists `upgrade` and Upgrade is set). */
export function upgradeOf(head: RequestHead): string | undefined {
  let upgrade: string | undefined;
  let connUpgrade = false;
  for (let i = 0; i < head.names.length; i++) {
    const n = head.names[i]!;
    if (n === 'upgrade') upgrade = head.values[i]!;
    else if (n === 'connection' && hasToken(head.values[i]!, 'upgrade')) connUpgrade = true;
  }
  return connUpgrade ? upgrade : undefined;
}
