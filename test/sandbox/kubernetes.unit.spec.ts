import { expect } from 'chai';
import nock from 'nock';
import { createKubernetesProvider, loadKubernetesClient } from '../../infra/sandbox/kubernetes.js';
import type { SandboxProvider, SandboxSpec } from '../../infra/sandbox/port.js';
import { skipUnlessCi } from '../support/skip.js';

/**
 * The kubernetes provider against the API's shapes (nock stands in for the API server:
 * the only fake in the provider tests). The host is under `.invalid`: nothing can leave.
 */
const API = 'https://k8s.svc-test.invalid:6443';
const NS = 'svc-sandboxes';
const SANDBOX = '0f8fad5b-d9cb-469f-a165-70867728950e';
const NAME = `svc-sbx-${SANDBOX}`;
const TOKEN = 'k8s-bearer-token-for-tests';

const kubeConfig = () => ({
  clusters: [{ name: 'test', server: API, skipTLSVerify: true }],
  users: [{ name: 'svc-server', token: TOKEN }],
  contexts: [{ name: 'test', cluster: 'test', user: 'svc-server', namespace: NS }],
  currentContext: 'test',
});

const spec = (): SandboxSpec => ({
  sandboxId: SANDBOX,
  sessionId: '7c9e6679-7425-40de-944b-e07fc1f90ae7',
  projectId: '16fd2706-8baf-433b-82eb-8c7fada847da',
  accountId: 'acct',
  labels: { 'svc.incarnation': '2' },
  env: { SVC_TOKEN: 'sandbox-service-key-0123456789', SVC_PROJECT_ID: '16fd2706-8baf-433b-82eb-8c7fada847da', SVC_SERVICE_PORT: '8000', MY_SECRET: 'hunter2' },
});

const status = (code: number, reason: string, message: string) => ({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code });
const podJson = (phase: string, extra: Record<string, unknown> = {}) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: {
    name: NAME,
    namespace: NS,
    uid: 'pod-uid-1',
    labels: { 'svc.sandbox': SANDBOX, 'svc.managed-by': 'svc' },
    annotations: { 'svc.daemon-port': '8000' },
    ...extra,
  },
  status: { phase },
});

describe('kubernetes sandbox provider (API shapes through nock)', () => {
  let provider: SandboxProvider;
  before(async function () {
    const loaded = await loadKubernetesClient().then(
      () => undefined,
      (err: Error) => err.message,
    );
    if (loaded) {
      // Printed, never silent: the dependency must change (package.json), not the test.
      skipUnlessCi(this, `the kubernetes provider tests: ${loaded}`);
    }
    // Another spec in this mocha worker may have restored http (nock.restore()): re-arm it.
    if (!nock.isActive()) nock.activate();
    nock.disableNetConnect();
  });
  after(() => nock.enableNetConnect());
  beforeEach(() => {
    provider = createKubernetesProvider({ kubeConfig: kubeConfig(), namespace: NS, image: 'registry.example/svc-sandbox:1', deleteGraceSeconds: 7 });
  });
  afterEach(() => {
    const pending = nock.pendingMocks();
    nock.cleanAll();
    expect(pending, 'every expected API call was made').to.deep.equal([]);
  });

  it('creates the Pod (labels, readiness on /svc/health, env only through the Secret), then a Secret and a Service owned by it', async () => {
    let pod: any;
    let secret: any;
    let service: any;
    const auth = { reqheaders: { authorization: `Bearer ${TOKEN}` } };
    nock(API, auth)
      .post(`/api/v1/namespaces/${NS}/pods`, (b) => ((pod = b), true))
      .reply(201, (_uri, body) => ({ ...(body as object), metadata: { ...(body as any).metadata, uid: 'pod-uid-1' }, status: { phase: 'Pending' } }));
    nock(API, auth)
      .post(`/api/v1/namespaces/${NS}/secrets`, (b) => ((secret = b), true))
      .reply(201, (_uri, body) => body as object);
    nock(API, auth)
      .post(`/api/v1/namespaces/${NS}/services`, (b) => ((service = b), true))
      .reply(201, (_uri, body) => body as object);

    const h = await provider.create(spec());
    expect(h).to.deep.equal({ sandboxId: SANDBOX, provider: 'kubernetes', ref: NAME, url: `http://${NAME}.${NS}.svc.cluster.local:8000` });

    const labels = { 'svc.project': spec().projectId, 'svc.session': spec().sessionId, 'svc.sandbox': SANDBOX, 'svc.managed-by': 'svc', 'svc.incarnation': '2' };
    expect(pod.metadata).to.deep.include({ name: NAME, namespace: NS, labels });
    const c = pod.spec.containers[0];
    expect(c.image).to.equal('registry.example/svc-sandbox:1');
    expect(c.readinessProbe.httpGet).to.deep.equal({ path: '/svc/health', port: 8000 });
    expect(c.ports).to.deep.equal([{ name: 'daemon', containerPort: 8000, protocol: 'TCP' }]);
    expect(c.envFrom).to.deep.equal([{ secretRef: { name: NAME } }]);
    expect(c.env).to.equal(undefined);
    expect(JSON.stringify(pod)).to.not.include('hunter2').and.not.include('sandbox-service-key');
    expect(pod.spec.automountServiceAccountToken).to.equal(false);
    expect(pod.spec.restartPolicy).to.equal('Never');
    expect(pod.spec.securityContext).to.include({ runAsNonRoot: true, runAsUser: 1000 });
    expect(c.securityContext).to.deep.equal({ allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } });
    expect(c.volumeMounts.map((m: any) => m.mountPath)).to.deep.equal(['/workspace', '/opt/svc/home']);
    expect(c.resources).to.equal(undefined);

    const owner = [{ apiVersion: 'v1', kind: 'Pod', name: NAME, uid: 'pod-uid-1', controller: false, blockOwnerDeletion: false }];
    expect(secret.metadata).to.deep.include({ name: NAME, labels, ownerReferences: owner });
    expect(secret.stringData).to.deep.equal(spec().env);
    expect(service.metadata).to.deep.include({ name: NAME, labels, ownerReferences: owner });
    expect(service.spec.selector).to.deep.equal({ 'svc.sandbox': SANDBOX, 'svc.managed-by': 'svc' });
    expect(service.spec.ports).to.deep.equal([{ name: 'daemon', port: 8000, targetPort: 8000, protocol: 'TCP' }]);
  });

  it("runs the spec's image (svc.toml [sandbox] image) held to its resources (cpus, memory_mb) as limits and requests", async () => {
    let pod: any;
    nock(API)
      .post(`/api/v1/namespaces/${NS}/pods`, (b) => ((pod = b), true))
      .reply(201, (_uri, body) => ({ ...(body as object), metadata: { ...(body as any).metadata, uid: 'pod-uid-1' }, status: { phase: 'Pending' } }));
    nock(API).post(`/api/v1/namespaces/${NS}/secrets`).reply(201, {});
    nock(API).post(`/api/v1/namespaces/${NS}/services`).reply(201, {});
    const own = createKubernetesProvider({ kubeConfig: kubeConfig(), namespace: NS, image: 'registry.example/svc-sandbox:1', resources: { limits: { 'ephemeral-storage': '2Gi' } } });
    await own.create({ ...spec(), image: 'ghcr.io/acme/dev:1', dockerfile: 'FROM x\n', resources: { cpus: 1.5, memoryMb: 4096 } });
    const c = pod.spec.containers[0];
    expect(c.image).to.equal('ghcr.io/acme/dev:1');
    expect(c.resources).to.deep.equal({ requests: { cpu: '1500m', memory: '4096Mi' }, limits: { 'ephemeral-storage': '2Gi', cpu: '1500m', memory: '4096Mi' } });
  });

  it("the server's caps (SVC_SANDBOX_MAX_CPUS, SVC_SANDBOX_MAX_MEMORY_MB) are every pod's limits: a manifest asking for more gets the caps, one asking nothing gets them as limits", async () => {
    const pods: any[] = [];
    for (let i = 0; i < 2; i++) {
      nock(API)
        .post(`/api/v1/namespaces/${NS}/pods`, (b) => (pods.push(b), true))
        .reply(201, (_uri, body) => ({ ...(body as object), metadata: { ...(body as any).metadata, uid: 'pod-uid-1' }, status: { phase: 'Pending' } }));
      nock(API).post(`/api/v1/namespaces/${NS}/secrets`).reply(201, {});
      nock(API).post(`/api/v1/namespaces/${NS}/services`).reply(201, {});
    }
    const capped = createKubernetesProvider({ kubeConfig: kubeConfig(), namespace: NS, image: 'registry.example/svc-sandbox:1', caps: { cpus: 2, memoryMb: 2048, pids: 1024, nofile: 4096, nproc: 4096 } });
    await capped.create({ ...spec(), resources: { cpus: 8, memoryMb: 65_536 } });
    await capped.create(spec());
    expect(pods[0].spec.containers[0].resources).to.deep.equal({ requests: { cpu: '2000m', memory: '2048Mi' }, limits: { cpu: '2000m', memory: '2048Mi' } });
    expect(pods[1].spec.containers[0].resources).to.deep.equal({ limits: { cpu: '2000m', memory: '2048Mi' } });
  });

  it('is idempotent: 409 AlreadyExists on the Pod answers the existing one, and 409 on the Secret and Service is fine', async () => {
    nock(API).post(`/api/v1/namespaces/${NS}/pods`).reply(409, status(409, 'AlreadyExists', `pods "${NAME}" already exists`));
    nock(API).get(`/api/v1/namespaces/${NS}/pods/${NAME}`).reply(200, podJson('Running'));
    nock(API).post(`/api/v1/namespaces/${NS}/secrets`).reply(409, status(409, 'AlreadyExists', `secrets "${NAME}" already exists`));
    nock(API).post(`/api/v1/namespaces/${NS}/services`).reply(409, status(409, 'AlreadyExists', `services "${NAME}" already exists`));
    const h = await provider.create(spec());
    expect(h.ref).to.equal(NAME);
    expect(h.url).to.equal(`http://${NAME}.${NS}.svc.cluster.local:8000`);
  });

  it('turns 403 into a clear error naming the verb, the resource, the namespace and the RBAC it needs', async () => {
    nock(API)
      .post(`/api/v1/namespaces/${NS}/pods`)
      .reply(403, status(403, 'Forbidden', `pods is forbidden: User "system:serviceaccount:svc:server" cannot create resource "pods" in API group "" in the namespace "${NS}"`));
    const err = await provider.create(spec()).then(
      () => undefined,
      (e: Error & { code?: string }) => e,
    );
    expect(err?.name).to.equal('SandboxError');
    expect(err?.code).to.equal('unavailable');
    expect(err?.message).to.include(`Kubernetes refused to create pod ${NAME} in namespace ${NS}: 403 Forbidden`);
    expect(err?.message).to.include('cannot create resource "pods"');
    expect(err?.message).to.include(`needs create, get, list, delete on pods, services and secrets in namespace ${NS}`);
  });

  it('reports other API failures with their status and message, and an unreachable API as unavailable', async () => {
    nock(API).post(`/api/v1/namespaces/${NS}/pods`).reply(422, status(422, 'Invalid', 'Pod "x" is invalid: spec.containers[0].image: Required value'));
    const err = await provider.create(spec()).then(
      () => undefined,
      (e: Error & { code?: string }) => e,
    );
    expect(err?.code).to.equal('create_failed');
    expect(err?.message).to.match(/could not create pod .* 422 Pod "x" is invalid/);

    nock(API).post(`/api/v1/namespaces/${NS}/pods`).replyWithError(Object.assign(new Error('connect ECONNREFUSED 203.0.113.1:6443'), { code: 'ECONNREFUSED' }));
    const down = await provider.create(spec()).then(
      () => undefined,
      (e: Error & { code?: string }) => e,
    );
    expect(down?.code).to.equal('unavailable');
    expect(down?.message).to.include(`Kubernetes API unreachable (${API})`);
    expect(down?.message).to.include('ECONNREFUSED');
  });

  it('destroy deletes the Pod (with its grace period), the Service and the Secret; 404 on any of them is fine', async () => {
    nock(API).delete(`/api/v1/namespaces/${NS}/pods/${NAME}`).query({ gracePeriodSeconds: '7' }).reply(200, podJson('Running', { deletionTimestamp: new Date().toISOString() }));
    nock(API).delete(`/api/v1/namespaces/${NS}/services/${NAME}`).reply(404, status(404, 'NotFound', `services "${NAME}" not found`));
    nock(API).delete(`/api/v1/namespaces/${NS}/secrets/${NAME}`).reply(404, status(404, 'NotFound', `secrets "${NAME}" not found`));
    await provider.destroy({ sandboxId: SANDBOX, provider: 'kubernetes', ref: NAME, url: '' });

    nock(API).delete(`/api/v1/namespaces/${NS}/pods/${NAME}`).query(true).reply(404, status(404, 'NotFound', 'gone'));
    nock(API).delete(`/api/v1/namespaces/${NS}/services/${NAME}`).reply(404, status(404, 'NotFound', 'gone'));
    nock(API).delete(`/api/v1/namespaces/${NS}/secrets/${NAME}`).reply(404, status(404, 'NotFound', 'gone'));
    await provider.destroy({ sandboxId: SANDBOX, provider: 'kubernetes', ref: NAME, url: '' });

    nock(API).delete(`/api/v1/namespaces/${NS}/pods/${NAME}`).query(true).reply(403, status(403, 'Forbidden', 'pods "x" is forbidden'));
    const err = await provider.destroy({ sandboxId: SANDBOX, provider: 'kubernetes', ref: NAME, url: '' }).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(err?.message).to.include(`Kubernetes refused to delete pod ${NAME} in namespace ${NS}: 403 Forbidden`);
  });

  it('inspect maps the pod phase: Pending/Running -> running, Succeeded/Failed/deleting/404 -> exited, API errors -> unknown', async () => {
    const h = { sandboxId: SANDBOX, provider: 'kubernetes' as const, ref: NAME, url: '' };
    const cases: [number, unknown, string][] = [
      [200, podJson('Running'), 'running'],
      [200, podJson('Pending'), 'running'],
      [200, podJson('Failed'), 'exited'],
      [200, podJson('Succeeded'), 'exited'],
      [200, podJson('Running', { deletionTimestamp: new Date().toISOString() }), 'exited'],
      [404, status(404, 'NotFound', 'not found'), 'exited'],
      [500, status(500, 'InternalError', 'etcd timeout'), 'unknown'],
    ];
    for (const [code, body, expected] of cases) {
      nock(API).get(`/api/v1/namespaces/${NS}/pods/${NAME}`).reply(code, body as object);
      expect(await provider.inspect(h), JSON.stringify(body)).to.equal(expected);
    }
  });

  it('lists the pods carrying the labels (and svc.managed-by=svc) as handles', async () => {
    nock(API)
      .get(`/api/v1/namespaces/${NS}/pods`)
      .query({ labelSelector: `svc.managed-by=svc,svc.project=${spec().projectId}` })
      .reply(200, { kind: 'PodList', apiVersion: 'v1', metadata: {}, items: [podJson('Running')] });
    const found = await provider.list!({ 'svc.project': spec().projectId });
    expect(found).to.deep.equal([{ sandboxId: SANDBOX, provider: 'kubernetes', ref: NAME, url: `http://${NAME}.${NS}.svc.cluster.local:8000` }]);
  });
});
