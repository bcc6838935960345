import { randomUUID } from 'node:crypto';
import { notFound } from '../../domain/errors.js';
import { checkHttpUrl, type CheckedHttpTarget, type OutboundPolicy } from '../../infra/net/outbound-policy.js';
import type { Db } from '../../infra/db/db.js';
import type { SecretBox } from '../../infra/secret-box.js';
import type { Channel, ChannelKind } from '../../contracts/channels.js';
import { channelQueries as q, type ChannelRow } from '../../sql/queries/channels.js';

/**
 * `svc channels`: a project's chat channels. A channel is an incoming-webhook URL (Slack,
 * or anything that accepts Slack's `{"text"}` payload); the URL is a credential, so it is
 * sealed at rest and shown only as its origin.
 */
/** The channel JSON of every response: the contract's. */
export type ChannelJson = Channel;

const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);

export function serializeChannel(c: ChannelRow): ChannelJson {
  return {
    channel_id: c.channel_id,
    project_id: c.project_id,
    kind: c.kind,
    webhook: c.webhook_hint,
    created_by: c.created_by,
    created_at: new Date(c.created_at).toISOString(),
    delivered_count: Number(c.delivered_count),
    last_delivered_at: iso(c.last_delivered_at),
    last_error: c.last_error,
    last_error_at: iso(c.last_error_at),
  };
}

/**
 * The outbound URL policy (infra/net/outbound-policy.ts) for a webhook: https only (http when the
 * operator allows it: tests, a receiver on the same host), no credentials, no local or
 * blocked host. `atDelivery`: the name must resolve, and the caller connects to the
 * address checked here; when storing, a name that does not resolve yet is accepted.
 */
export async function checkWebhookUrl(raw: string, policy: OutboundPolicy, allowHttp: boolean, atDelivery = false): Promise<CheckedHttpTarget> {
  return checkHttpUrl(raw, policy, {
    field: 'webhook_url',
    allowHttp,
    mustResolve: atDelivery,
    httpHint: ' (an operator can allow http with SVC_CHANNELS_ALLOW_HTTP=1)',
  });
}

export interface ChannelDeps {
  db: Db;
  secrets: SecretBox;
  allowHttp: boolean;
  policy: OutboundPolicy;
}

export async function addChannel(deps: ChannelDeps, projectId: string, actor: string, input: { kind: ChannelKind; webhook_url: string }): Promise<ChannelJson> {
  const u = (await checkWebhookUrl(input.webhook_url, deps.policy, deps.allowHttp)).url;
  const row = await deps.db.one<ChannelRow>(
    q.insert({
      channelId: randomUUID(),
      projectId,
      kind: input.kind,
      webhookUrlEnc: deps.secrets.seal(u.toString()),
      webhookHint: `${u.origin}/…`,
      createdBy: actor,
    }),
  );
  return serializeChannel(row!);
}

export async function listChannels(db: Db, projectId: string): Promise<ChannelJson[]> {
  return (await db.rows<ChannelRow>(q.listForProject(projectId))).map(serializeChannel);
}

export async function removeChannel(db: Db, projectId: string, channelId: string): Promise<void> {
  const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
  if (!UUID.test(channelId)) throw notFound('Channel');
  const gone = await db.rows(q.remove(projectId, channelId.toLowerCase()));
  if (gone.length === 0) throw notFound('Channel');
}
