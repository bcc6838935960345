/**
 * The `kubernetes` sandbox provider: one Pod + one Service (+ one Secret holding the
 * injected environment) per sandbox, in one namespace, through @kubernetes/client-node.
 * Reference and RBAC: docs/sandbox-providers.md.
 *
 *   - Pod `svc-sbx-<id>`: the spec's image (the manifest's `[sandbox] image`) or the
 *     configured sandbox image (the cluster must be able to pull it; a repo Dockerfile is
 *     not built here), resources from the spec (`podResources`), `restartPolicy: Never` (a sandbox that
 *     ends is `exited`; the sessions layer decides what next), readiness probe
 *     `GET /svc/health` on the daemon port, the environment only through `envFrom` the
 *     Secret (no value in the pod spec), no service-account token, non-root uid 1000,
 *     no capabilities, emptyDir volumes for /workspace and /opt/svc/home.
 *   - Secret `svc-sbx-<id>`: every injected variable (SVC_TOKEN, the project tokens and
 *     secrets included), owned by the Pod so the cluster collects it with the Pod.
 *   - Service `svc-sbx-<id>` (ClusterIP, owned by the Pod): the server dials
 *     `http://svc-sbx-<id>.<namespace>.svc.<clusterDomain>:8000`.
 * All three carry the labels `svc.project`, `svc.session`, `svc.sandbox`,
 * `svc.managed-by=svc` and the spec's labels; `list` selects pods by label.
 *
 * Idempotence: create answers the existing sandbox when its objects exist already (409);
 * destroy deletes the three and takes 404 as done. 401/403 become a clear
 * `unavailable` error naming the verb, resource and namespace.
 *
 * HTTP: the API is driven through the library's generated CoreV1Api over node's own
 * http/https modules, authenticated with the kubeconfig's TLS and credentials
 * (`applyToHTTPSOptions`: tokens, client certificates, exec plugins), instead of the
 * library's bundled fetch.
 */
import http from 'node:http';
import https from 'node:https';
import type {
  CoreV1Api,
  KubeConfig,
  RequestContext,
  ResponseContext,
  V1OwnerReference,
  V1Pod,
  V1Secret,
  V1Service,
} from '@kubernetes/client-node';
import { SandboxError, type SandboxHandle, type SandboxLiveness, type SandboxProvider, type SandboxSpec } from './port.js';
import type { SandboxCaps } from './limits.js';
import { LABEL, sandboxLabels, sandboxName } from './provider-util.js';
import { DEFAULT_SANDBOX_IMAGE } from './docker.js';

type K8sLib = typeof import('@kubernetes/client-node');

/**
 * The library, loaded on first use rather than at import: a library that cannot load on
 * this Node (client-node 2.x bundles undici 8, which needs Node >= 22) must fail the
 * kubernetes provider with a clear error, not the server's start.
 */
let libPromise: Promise<K8sLib> | undefined;
export function loadKubernetesClient(): Promise<K8sLib> {
  libPromise ??= import('@kubernetes/client-node').catch((err: Error) => {
    libPromise = undefined;
    throw new SandboxError(
      'unavailable',
      `@kubernetes/client-node cannot be loaded on Node ${process.versions.node}: ${err.message} (client-node 2.x needs Node >= 22; on Node 20 use client-node ^1.4)`,
    );
  });
  return libPromise;
}

export interface KubernetesProviderOptions {
  /**
   * Cluster access: a KubeConfig, or the object `KubeConfig.loadFromOptions` takes
   * (clusters, users, contexts, currentContext); default `loadFromDefault()`:
   * KUBECONFIG, ~/.kube/config, or the in-cluster service account.
   */
  kubeConfig?: KubeConfig | Record<string, unknown>;
  namespace: string;
  /** The sandbox image the cluster pulls (default `svc-sandbox:local`: push yours and set SVC_SANDBOX_IMAGE). */
  image?: string;
  imagePullPolicy?: 'Always' | 'IfNotPresent' | 'Never';
  imagePullSecrets?: string[];
  /** DNS suffix of the cluster (default `cluster.local`). */
  clusterDomain?: string;
  /** The daemon port in the pod (default: SVC_SERVICE_PORT of the spec, else 8000). */
  port?: number;
  serviceAccountName?: string;
  runtimeClassName?: string;
  nodeSelector?: Record<string, string>;
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  /** Seconds the pod gets to stop on destroy (default 10). */
  deleteGraceSeconds?: number;
  /** Variables added to every sandbox's environment (tests). */
  extraEnv?: Record<string, string>;
  /** Per-request timeout towards the API server (default 15 s). */
  requestTimeoutMs?: number;
  /** The server's caps (infra/sandbox/limits.ts): cpu and memory limits of every pod. */
  caps?: SandboxCaps;
}

/**
 * The container's resources: the spec's (the project's `[sandbox] cpus` / `memory_mb`) as
 * both limit and request (the pod is scheduled where they fit, and held to them), over the
 * provider's own.
 */
function podResources(spec: Pick<SandboxSpec, 'resources'>, opts: Pick<KubernetesProviderOptions, 'resources' | 'caps'>): { resources?: { requests?: Record<string, string>; limits?: Record<string, string> } } {
  const own: Record<string, string> = {};
  const cpuOf = (cpus: number) => `${Math.max(1, Math.round(cpus * 1000))}m`;
  const cpus = spec.resources?.cpus !== undefined && opts.caps ? Math.min(spec.resources.cpus, opts.caps.cpus) : spec.resources?.cpus;
  const memoryMb = spec.resources?.memoryMb !== undefined && opts.caps ? Math.min(spec.resources.memoryMb, opts.caps.memoryMb) : spec.resources?.memoryMb;
  if (cpus) own.cpu = cpuOf(cpus);
  if (memoryMb) own.memory = `${memoryMb}Mi`;
  // The server's caps are the limits whatever the manifest says (the manifest's, smaller, win).
  const capped: Record<string, string> = opts.caps ? { cpu: cpuOf(opts.caps.cpus), memory: `${opts.caps.memoryMb}Mi` } : {};
  if (!Object.keys(own).length) {
    if (!opts.caps) return opts.resources ? { resources: opts.resources } : {};
    return { resources: { ...(opts.resources?.requests ? { requests: opts.resources.requests } : {}), limits: { ...opts.resources?.limits, ...capped } } };
  }
  return { resources: { requests: { ...opts.resources?.requests, ...own }, limits: { ...opts.resources?.limits, ...capped, ...own } } };
}

/** The library's request context sent over node's http/https with the kubeconfig's auth. */
function nodeHttpLibrary(lib: K8sLib, kc: KubeConfig, timeoutMs: number) {
  const { ResponseContext, SelfDecodingBody } = lib;
  return lib.wrapHttpLibrary({
    async send(request: RequestContext): Promise<ResponseContext> {
      const url = new URL(request.getUrl());
      const opts: https.RequestOptions = { method: request.getHttpMethod(), headers: { ...request.getHeaders() }, timeout: timeoutMs };
      await kc.applyToHTTPSOptions(opts);
      const body = request.getBody();
      const mod = url.protocol === 'http:' ? http : https;
      return new Promise<ResponseContext>((resolve, reject) => {
        const req = mod.request(url, opts, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('error', reject);
          res.on('end', () => {
            const headers: Record<string, string> = {};
            for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(', ') : v;
            resolve(new ResponseContext(res.statusCode ?? 0, headers, new SelfDecodingBody(Promise.resolve(Buffer.concat(chunks)))));
          });
        });
        req.on('timeout', () => req.destroy(new Error(`no answer from the Kubernetes API within ${timeoutMs} ms`)));
        req.on('error', reject);
        if (typeof body === 'string') req.end(body);
        else req.end();
      });
    },
  });
}

/** The HTTP status of an ApiException (the library's error for a non-2xx answer). */
const codeOf = (err: unknown): number | undefined => {
  const e = err as { code?: unknown; body?: unknown; name?: string };
  return typeof e?.code === 'number' && 'body' in (e as object) ? e.code : undefined;
};

function apiMessage(err: unknown): string {
  if (codeOf(err) !== undefined) {
    const e = err as { body: unknown; message: string };
    const body = e.body;
    try {
      const parsed = typeof body === 'string' ? (JSON.parse(body) as { message?: string }) : (body as { message?: string });
      if (parsed?.message) return parsed.message;
    } catch {
      /* not JSON */
    }
    return typeof body === 'string' && body ? body.slice(0, 300) : e.message.split('\n')[0]!;
  }
  return (err as Error)?.message ?? String(err);
}

export function createKubernetesProvider(opts: KubernetesProviderOptions): SandboxProvider {
  const namespace = opts.namespace;
  if (!namespace) throw new SandboxError('unavailable', 'the kubernetes provider needs a namespace (SVC_K8S_NAMESPACE)');
  let server = '';
  let clientPromise: Promise<CoreV1Api> | undefined;
  /** The API client, built on first use (see loadKubernetesClient). */
  const api = (): Promise<CoreV1Api> => {
    clientPromise ??= (async () => {
      const lib = await loadKubernetesClient();
      let kc: KubeConfig;
      if (opts.kubeConfig instanceof lib.KubeConfig) kc = opts.kubeConfig;
      else {
        kc = new lib.KubeConfig();
        if (opts.kubeConfig) kc.loadFromOptions(opts.kubeConfig);
        else kc.loadFromDefault();
      }
      const cluster = kc.getCurrentCluster();
      if (!cluster) throw new SandboxError('unavailable', 'no Kubernetes cluster configured: set KUBECONFIG, or run the server in-cluster');
      server = cluster.server;
      return new lib.CoreV1Api(
        lib.createConfiguration({
          baseServer: new lib.ServerConfiguration(cluster.server, {}),
          // Authentication happens in the HTTP library (applyToHTTPSOptions).
          authMethods: {},
          httpApi: nodeHttpLibrary(lib, kc, opts.requestTimeoutMs ?? 15_000),
        }),
      );
    })().catch((err: unknown) => {
      clientPromise = undefined;
      throw err;
    });
    return clientPromise;
  };
  const image = opts.image ?? DEFAULT_SANDBOX_IMAGE;
  const clusterDomain = opts.clusterDomain ?? 'cluster.local';
  const grace = opts.deleteGraceSeconds ?? 10;

  const objectName = (sandboxId: string) => `svc-sbx-${sandboxName(sandboxId)}`.slice(0, 63).replace(/-+$/, '');
  const urlOf = (name: string, port: number) => `http://${name}.${namespace}.svc.${clusterDomain}:${port}`;

  /** A Kubernetes API failure as a SandboxError a person can act on. */
  function fail(err: unknown, verb: string, resource: string, name?: string): SandboxError {
    if (err instanceof SandboxError) return err;
    const code = codeOf(err);
    const what = `${verb} ${resource}${name ? ` ${name}` : ''} in namespace ${namespace}`;
    if (code === 401) return new SandboxError('unavailable', `Kubernetes refused to ${what}: 401 Unauthorized (${apiMessage(err)}); check the kubeconfig's credentials`, { status: code });
    if (code === 403) {
      return new SandboxError(
        'unavailable',
        `Kubernetes refused to ${what}: 403 Forbidden (${apiMessage(err)}). The server's account needs create, get, list, delete on pods, services and secrets in namespace ${namespace} (docs/sandbox-providers.md, RBAC)`,
        { status: code },
      );
    }
    if (code === undefined) return new SandboxError('unavailable', `Kubernetes API unreachable (${server}) trying to ${what}: ${apiMessage(err)}`);
    return new SandboxError('create_failed', `Kubernetes could not ${what}: ${code} ${apiMessage(err)}`, { status: code });
  }

  const handleOf = (pod: V1Pod, fallbackId: string): SandboxHandle => {
    const name = pod.metadata?.name ?? objectName(fallbackId);
    const port = Number(pod.metadata?.annotations?.['svc.daemon-port'] ?? 8000);
    return { sandboxId: pod.metadata?.labels?.[LABEL.sandbox] ?? fallbackId, provider: 'kubernetes', ref: name, url: urlOf(name, port) };
  };

  /** Creates an object; an existing one (409) is fine. */
  async function ensure<T>(resource: string, name: string, create: () => Promise<T>): Promise<void> {
    try {
      await create();
    } catch (err) {
      if (codeOf(err) !== 409) throw fail(err, 'create', resource, name);
    }
  }

  async function remove(resource: string, name: string, del: () => Promise<unknown>): Promise<void> {
    try {
      await del();
    } catch (err) {
      if (codeOf(err) !== 404) throw fail(err, 'delete', resource, name);
    }
  }

  return {
    name: 'kubernetes',

    async create(spec: SandboxSpec): Promise<SandboxHandle> {
      if (spec.app) throw new SandboxError('unavailable', `app sandboxes need the process or bwrap provider (the kubernetes provider has no host directory to run the app from)`);
      const name = objectName(spec.sandboxId);
      const port = opts.port ?? Number(spec.env.SVC_SERVICE_PORT ?? 8000);
      const labels = sandboxLabels(spec);
      const env = { ...spec.env, ...opts.extraEnv, SVC_SERVICE_PORT: String(port) };

      const pod: V1Pod = {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name, namespace, labels, annotations: { 'svc.daemon-port': String(port) } },
        spec: {
          restartPolicy: 'Never',
          automountServiceAccountToken: false,
          enableServiceLinks: false,
          ...(opts.serviceAccountName ? { serviceAccountName: opts.serviceAccountName } : {}),
          ...(opts.runtimeClassName ? { runtimeClassName: opts.runtimeClassName } : {}),
          ...(opts.nodeSelector ? { nodeSelector: opts.nodeSelector } : {}),
          ...(opts.imagePullSecrets?.length ? { imagePullSecrets: opts.imagePullSecrets.map((n) => ({ name: n })) } : {}),
          securityContext: { runAsNonRoot: true, runAsUser: 1000, runAsGroup: 1000, fsGroup: 1000 },
          containers: [
            {
              name: 'sandbox',
              image: spec.image ?? image,
              imagePullPolicy: opts.imagePullPolicy ?? 'IfNotPresent',
              envFrom: [{ secretRef: { name } }],
              ports: [{ name: 'daemon', containerPort: port, protocol: 'TCP' }],
              readinessProbe: { httpGet: { path: '/svc/health', port }, periodSeconds: 2, timeoutSeconds: 2, failureThreshold: 3 },
              securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
              ...podResources(spec, opts),
              volumeMounts: [
                { name: 'workspace', mountPath: '/workspace' },
                { name: 'home', mountPath: '/opt/svc/home' },
              ],
            },
          ],
          volumes: [
            { name: 'workspace', emptyDir: {} },
            { name: 'home', emptyDir: {} },
          ],
        },
      };

      const core = await api();
      let created: V1Pod;
      try {
        created = await core.createNamespacedPod({ namespace, body: pod });
      } catch (err) {
        if (codeOf(err) !== 409) throw fail(err, 'create', 'pod', name);
        // Already there (a retried create): answer it, and make sure its Secret and Service exist.
        try {
          created = await core.readNamespacedPod({ name, namespace });
        } catch (readErr) {
          throw fail(readErr, 'get', 'pod', name);
        }
      }
      const owner: V1OwnerReference[] = created.metadata?.uid
        ? [{ apiVersion: 'v1', kind: 'Pod', name, uid: created.metadata.uid, controller: false, blockOwnerDeletion: false }]
        : [];
      const secret: V1Secret = {
        apiVersion: 'v1',
        kind: 'Secret',
        type: 'Opaque',
        metadata: { name, namespace, labels, ownerReferences: owner },
        stringData: env,
      };
      const service: V1Service = {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name, namespace, labels, ownerReferences: owner },
        spec: { type: 'ClusterIP', selector: { [LABEL.sandbox]: spec.sandboxId, [LABEL.managedBy]: 'svc' }, ports: [{ name: 'daemon', port, targetPort: port, protocol: 'TCP' }] },
      };
      await ensure('secret', name, () => core.createNamespacedSecret({ namespace, body: secret }));
      await ensure('service', name, () => core.createNamespacedService({ namespace, body: service }));
      return handleOf(created, spec.sandboxId);
    },

    async inspect(handle: SandboxHandle): Promise<SandboxLiveness> {
      try {
        const core = await api();
        const pod = await core.readNamespacedPod({ name: handle.ref, namespace });
        if (pod.metadata?.deletionTimestamp) return 'exited';
        const phase = pod.status?.phase;
        // Pending: scheduled or pulling, it will run; Unknown: the node is unreachable.
        if (phase === 'Running' || phase === 'Pending') return 'running';
        if (phase === 'Succeeded' || phase === 'Failed') return 'exited';
        return 'unknown';
      } catch (err) {
        return codeOf(err) === 404 ? 'exited' : 'unknown';
      }
    },

    async destroy(handle: SandboxHandle): Promise<void> {
      const name = handle.ref || objectName(handle.sandboxId);
      const core = await api();
      await remove('pod', name, () => core.deleteNamespacedPod({ name, namespace, gracePeriodSeconds: grace }));
      await remove('service', name, () => core.deleteNamespacedService({ name, namespace }));
      await remove('secret', name, () => core.deleteNamespacedSecret({ name, namespace }));
    },

    async list(labels: Record<string, string>): Promise<SandboxHandle[]> {
      const selector = Object.entries({ [LABEL.managedBy]: 'svc', ...labels })
        .map(([k, v]) => `${k}=${v}`)
        .join(',');
      const core = await api();
      try {
        const pods = await core.listNamespacedPod({ namespace, labelSelector: selector });
        return pods.items.map((p) => handleOf(p, p.metadata?.labels?.[LABEL.sandbox] ?? ''));
      } catch (err) {
        throw fail(err, 'list', 'pods');
      }
    },
  };
}
