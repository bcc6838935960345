/**
 * The HTTP API, as the CLI sees it. `Authorization: Bearer <token>`; every response >= 400
 * becomes an ApiError carrying the contract's body (`{"error","message",...}`).
 */
import { ApiError, NetworkError, codeForStatus } from './errors.js';
import type { FetchLike } from './http.js';

// The wire shapes are the contracts' (type-only: nothing is loaded at run time).
export type { ChangeRequest, CrStatus as CRStatus, MergePreview, Diff, Project, Me, CrChecks, CrCost } from '../contracts/index.js';
import type { CrChecks, CrCost } from '../contracts/index.js';
import type { ChangeRequest, Compare, CrStack, CrStatus as CRStatus, CreateChangeRequestInput, CreateProjectInput, Diff, MergePreview, Me, Project } from '../contracts/index.js';

export type CreateCRInput = CreateChangeRequestInput;

export interface ApiClientOptions {
  /** Host URL, with or without the trailing `/v1`. */
  baseUrl: string;
  token?: string;
  fetch: FetchLike;
  userAgent?: string;
  /** Said when the token is refused (401): where it came from and how to replace it. */
  refusedHint?: string;
}

export class ApiClient {
  readonly apiBase: string;

  constructor(private readonly opts: ApiClientOptions) {
    const base = opts.baseUrl.replace(/\/+$/, '');
    this.apiBase = base.endsWith('/v1') ? base : `${base}/v1`;
  }

  async request<T>(method: string, path: string, body?: unknown): Promise<T> {
    const url = `${this.apiBase}${path}`;
    const headers: Record<string, string> = { accept: 'application/json' };
    if (this.opts.token) headers.authorization = `Bearer ${this.opts.token}`;
    if (this.opts.userAgent) headers['user-agent'] = this.opts.userAgent;
    let payload: string | undefined;
    if (body !== undefined) {
      headers['content-type'] = 'application/json';
      payload = JSON.stringify(body);
    }
    let res;
    try {
      res = await this.opts.fetch(url, payload === undefined ? { method, headers } : { method, headers, body: payload });
    } catch (e) {
      throw new NetworkError(this.apiBase, e);
    }
    const text = await res.text();
    let parsed: unknown;
    if (text !== '') {
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = undefined;
      }
    }
    if (res.status >= 400) {
      const b = parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {};
      const reason = typeof b.error === 'string' ? b.error : `HTTP ${res.status}`;
      const message = typeof b.message === 'string' && b.message ? b.message : reason;
      const hint = res.status === 401 && this.opts.token ? this.opts.refusedHint : undefined;
      throw new ApiError(res.status, codeForStatus(res.status, reason), reason, message, b, hint);
    }
    if (parsed === undefined && text !== '') {
      throw new ApiError(res.status, 'http_error', 'Bad response', `${method} ${path}: response is not JSON`, {});
    }
    return parsed as T;
  }

  /** `{"<key>": value}` envelopes; anything else is a server the CLI does not understand. */
  private async envelope<T>(key: string, method: string, path: string, body?: unknown): Promise<T> {
    const r = await this.request<Record<string, unknown> | null>(method, path, body);
    if (!r || typeof r !== 'object' || !(key in r)) {
      throw new ApiError(200, 'http_error', 'Bad response', `${method} ${path}: response has no "${key}"`, {});
    }
    return r[key] as T;
  }

  me(): Promise<Me> {
    return this.request('GET', '/accounts/me');
  }

  async listProjects(limit = 30): Promise<Project[]> {
    return this.pages<Project>('projects', '/projects', limit);
  }

  /**
   * Follows cursor pages (`next_cursor`) until `limit` items or the last page: lists are
   * paginated (per_page at most 100), the CLI asks for what it shows.
   */
  private async pages<T>(key: string, path: string, limit: number): Promise<T[]> {
    const out: T[] = [];
    let cursor: string | null = null;
    const sep = path.includes('?') ? '&' : '?';
    do {
      // The server's default page is 30: ask for a size only when another one saves a round trip.
      const perPage = Math.min(100, Math.max(1, limit - out.length));
      const params: string[] = [...(perPage !== 30 && limit - out.length !== 30 ? [`per_page=${perPage}`] : []), ...(cursor ? [`cursor=${enc(cursor)}`] : [])];
      const r: Record<string, unknown> | null = await this.request<Record<string, unknown> | null>(
        'GET',
        params.length ? `${path}${sep}${params.join('&')}` : path,
      );
      if (!r || typeof r !== 'object' || !Array.isArray(r[key])) {
        throw new ApiError(200, 'http_error', 'Bad response', `GET ${path}: response has no "${key}"`, {});
      }
      out.push(...(r[key] as T[]));
      cursor = typeof r.next_cursor === 'string' && r.next_cursor ? r.next_cursor : null;
    } while (cursor && out.length < limit);
    return out.slice(0, limit);
  }

  /** No repo_url: the server creates a managed repository for it. */
  async createProject(input: CreateProjectInput): Promise<Project> {
    return this.envelope('project', 'POST', '/projects', input);
  }

  async getProject(idOrSlug: string): Promise<Project> {
    return this.envelope('project', 'GET', `/projects/${enc(idOrSlug)}`);
  }

  private crPath(project: string, cr?: string | number, tail = ''): string {
    const base = `/projects/${enc(project)}/change-requests`;
    return cr === undefined ? base : `${base}/${enc(String(cr))}${tail}`;
  }

  async listChangeRequests(project: string, status: CRStatus | 'all', limit = 30): Promise<ChangeRequest[]> {
    return this.pages<ChangeRequest>('change_requests', `${this.crPath(project)}?status=${enc(status)}`, limit);
  }

  async getChangeRequest(project: string, cr: string | number): Promise<ChangeRequest> {
    return this.envelope('change_request', 'GET', this.crPath(project, cr));
  }

  async createChangeRequest(project: string, input: CreateCRInput): Promise<ChangeRequest> {
    return this.envelope('change_request', 'POST', this.crPath(project), input);
  }

  getDiff(project: string, cr: string | number): Promise<Diff> {
    return this.request('GET', this.crPath(project, cr, '/diff'));
  }

  /** Two live branches compared (`base` defaults to the project's default branch). */
  compare(project: string, head: string, base?: string): Promise<Compare> {
    const q = new URLSearchParams({ head, ...(base ? { base } : {}) });
    return this.request('GET', `/projects/${enc(project)}/compare?${q}`);
  }

  getMergePreview(project: string, cr: string | number): Promise<MergePreview> {
    return this.request('GET', this.crPath(project, cr, '/merge-preview'));
  }

  async merge(project: string, cr: string | number, message?: string, opts: { stack?: boolean } = {}): Promise<ChangeRequest> {
    const body = { ...(message === undefined ? {} : { message }), ...(opts.stack ? { stack: true } : {}) };
    return this.envelope('change_request', 'POST', this.crPath(project, cr, '/merge'), body);
  }

  /** Merge when green: the server merges once every check and required status passed on this head (202). */
  async mergeWhenGreen(project: string, cr: string | number, expectedHeadSha?: string): Promise<CrChecks['auto_merge'] & object> {
    return this.envelope('auto_merge', 'POST', this.crPath(project, cr, '/merge'), { when: 'checks_pass', ...(expectedHeadSha ? { expected_head_sha: expectedHeadSha } : {}) });
  }

  /** The CR's stack: ancestors root first, the CR, its descendants. */
  getStack(project: string, cr: string | number): Promise<CrStack> {
    return this.request('GET', this.crPath(project, cr, '/stack'));
  }

  getChecks(project: string, cr: string | number): Promise<CrChecks> {
    return this.request('GET', this.crPath(project, cr, '/checks'));
  }

  /** What the CR cost: its session's calls that belong to it, money, sandbox and check time. */
  getCost(project: string, cr: string | number): Promise<CrCost> {
    return this.envelope('cost', 'GET', this.crPath(project, cr, '/cost'));
  }

  async close(project: string, cr: string | number): Promise<ChangeRequest> {
    return this.envelope('change_request', 'POST', this.crPath(project, cr, '/close'));
  }

  async reopen(project: string, cr: string | number): Promise<ChangeRequest> {
    return this.envelope('change_request', 'POST', this.crPath(project, cr, '/reopen'));
  }
}

const enc = encodeURIComponent;
