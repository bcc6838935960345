import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parse, parseAllDocuments } from 'yaml';
import { projectRoot } from '../../../lib/paths.js';
import { LABEL, sandboxLabels } from '../../../infra/sandbox/provider-util.js';

/**
 * The Helm chart ops/helm/svc, checked WITHOUT helm (not on npm or Debian) and WITHOUT a
 * template engine: each template is flattened, not rendered. Lines holding only template
 * actions (if / else / end / toYaml blocks) are dropped, so both branches of a conditional
 * stay in; every other `{{ ... }}` becomes the placeholder `TPL`. The flattened manifests
 * are parsed with `yaml` and checked:
 * - every field name against the Kubernetes models of @kubernetes/client-node (a typo or a
 *   field at the wrong level fails), scalars against their types (TPL passes any scalar);
 * - the fields Kubernetes requires and the references between objects (selectors and pod
 *   labels, named ports, Secret keys, PVC, ServiceAccount, Role subjects, hooks);
 * - every `.Values.x.y` a template reads exists in values.yaml.
 * Not checked: what Go templates and Sprig functions evaluate to (types of the rendered
 * values, `required` messages, `default`), and anything only `helm lint` / `helm template`
 * / a cluster's admission would catch.
 */
const chart = path.join(projectRoot, 'ops', 'helm', 'svc');
const models = (await import(pathToFileURL(path.join(projectRoot, 'node_modules', '@kubernetes', 'client-node', 'dist', 'gen', 'models', 'ObjectSerializer.js')).href)) as Record<
  string,
  { getAttributeTypeMap?: () => Array<{ baseName: string; type: string }> }
>;

type Obj = Record<string, any>;

function flatten(template: string): string {
  return template
    .split('\n')
    .filter((l) => !/^\s*(\{\{-?[^}]*-?\}\}\s*)+$/.test(l))
    .map((l) => l.replace(/\{\{-?.*?-?\}\}/g, 'TPL'))
    .join('\n');
}

function manifests(): Array<{ file: string; doc: Obj }> {
  const out: Array<{ file: string; doc: Obj }> = [];
  for (const file of readdirSync(path.join(chart, 'templates')).filter((f) => f.endsWith('.yaml'))) {
    for (const d of parseAllDocuments(flatten(readFileSync(path.join(chart, 'templates', file), 'utf8')))) {
      expect(d.errors, `${file}: ${d.errors.map((e) => e.message).join('; ')}`).to.deep.equal([]);
      const doc = d.toJS() as Obj | null;
      if (doc) out.push({ file, doc });
    }
  }
  return out;
}

const MODEL: Record<string, string> = {
  Deployment: 'V1Deployment',
  Service: 'V1Service',
  Job: 'V1Job',
  Role: 'V1Role',
  RoleBinding: 'V1RoleBinding',
  Ingress: 'V1Ingress',
  PersistentVolumeClaim: 'V1PersistentVolumeClaim',
  Secret: 'V1Secret',
  ServiceAccount: 'V1ServiceAccount',
  NetworkPolicy: 'V1NetworkPolicy',
};

/** Every key is a field of the model; scalars have the model's type (TPL stands for any scalar). */
function checkShape(value: unknown, type: string, at: string, problems: string[]): void {
  if (value === null || value === undefined) return;
  const scalar = (ok: boolean) => {
    if (!ok && value !== 'TPL') problems.push(`${at}: expected ${type}, got ${JSON.stringify(value)}`);
  };
  if (type === 'string' || type === 'Date') return scalar(typeof value === 'string');
  if (type === 'number') return scalar(typeof value === 'number');
  if (type === 'boolean') return scalar(typeof value === 'boolean');
  if (type === 'IntOrString') return scalar(typeof value === 'string' || typeof value === 'number');
  if (type === 'any' || type === 'object') return;
  const arr = /^Array<(.+)>$/.exec(type);
  if (arr) {
    if (!Array.isArray(value)) return void problems.push(`${at}: expected a list`);
    value.forEach((v, i) => checkShape(v, arr[1]!, `${at}[${i}]`, problems));
    return;
  }
  const map = /^\{ \[key: string\]: (.+); \}$/.exec(type);
  if (map) {
    if (typeof value !== 'object' || Array.isArray(value)) return void problems.push(`${at}: expected a map`);
    for (const [k, v] of Object.entries(value)) checkShape(v, map[1]!, `${at}.${k}`, problems);
    return;
  }
  const model = models[type];
  if (!model?.getAttributeTypeMap) return void problems.push(`${at}: unknown model ${type}`);
  if (typeof value !== 'object' || Array.isArray(value)) return void problems.push(`${at}: expected an object (${type})`);
  const attrs = new Map(model.getAttributeTypeMap().map((a) => [a.baseName, a.type]));
  for (const [k, v] of Object.entries(value)) {
    const t = attrs.get(k);
    if (!t) problems.push(`${at}.${k}: not a field of ${type}`);
    else checkShape(v, t, `${at}.${k}`, problems);
  }
}

describe('Helm chart ops/helm/svc (flattened templates, validated without helm)', () => {
  const docs = manifests();
  const byKind = (kind: string) => docs.filter((d) => d.doc.kind === kind).map((d) => d.doc);
  const values = parse(readFileSync(path.join(chart, 'values.yaml'), 'utf8')) as Obj;

  it('Chart.yaml is a v2 application chart; values.yaml parses', () => {
    const c = parse(readFileSync(path.join(chart, 'Chart.yaml'), 'utf8')) as Obj;
    expect(c).to.include({ apiVersion: 'v2', name: 'svc', type: 'application' });
    expect(c.version).to.match(/^\d+\.\d+\.\d+$/);
    expect(values.image.repository).to.be.a('string');
  });

  it('renders the objects the issue lists, each with apiVersion, kind, metadata.name and the release labels', () => {
    expect(docs.map((d) => d.doc.kind).sort()).to.deep.equal(
      ['Deployment', 'Deployment', 'Ingress', 'Job', 'NetworkPolicy', 'PersistentVolumeClaim', 'Role', 'RoleBinding', 'Secret', 'Service', 'ServiceAccount'].sort(),
    );
    for (const { file, doc } of docs) {
      expect(doc.apiVersion, file).to.be.a('string');
      expect(doc.metadata?.name, file).to.be.a('string');
      expect(doc.metadata?.labels?.['app.kubernetes.io/name'], file).to.equal('svc');
    }
  });

  it('every field is one the Kubernetes models know, with the right scalar types', () => {
    const problems: string[] = [];
    for (const { file, doc } of docs) checkShape(doc, MODEL[doc.kind]!, `${file}:${doc.kind}`, problems);
    expect(problems).to.deep.equal([]);
  });

  it('api and worker Deployments: selectors match pod labels, probes on named ports, the data volume on the PVC, non-root, the Secret keys', () => {
    const deployments = byKind('Deployment');
    const secret = byKind('Secret')[0]!;
    const pvc = byKind('PersistentVolumeClaim')[0]!;
    const sa = byKind('ServiceAccount')[0]!;
    expect(deployments.map((d) => d.spec.template.spec.containers[0].args)).to.deep.equal([['api'], ['worker']]);
    for (const d of deployments) {
      expect(d.apiVersion).to.equal('apps/v1');
      expect(d.spec.replicas).to.equal('TPL');
      const podLabels = d.spec.template.metadata.labels;
      for (const [k, v] of Object.entries(d.spec.selector.matchLabels)) expect(podLabels[k], k).to.equal(v);
      const pod = d.spec.template.spec;
      expect(pod.serviceAccountName).to.equal(sa.metadata.name);
      expect(pod.securityContext.runAsNonRoot).to.equal(true);
      const c = pod.containers[0];
      expect(c.name).to.be.a('string');
      expect(c.image).to.be.a('string');
      const ports = c.ports.map((p: Obj) => p.name);
      expect(c.readinessProbe.httpGet).to.deep.equal({ path: '/readyz', port: 'http' });
      expect(c.livenessProbe.httpGet).to.deep.equal({ path: '/healthz', port: 'http' });
      expect(ports).to.include('http');
      expect(c.ports[0].containerPort).to.equal(8080);
      const volumes = new Map(pod.volumes.map((v: Obj) => [v.name, v]));
      for (const m of c.volumeMounts) expect(volumes.has(m.name), m.name).to.equal(true);
      expect((volumes.get('data') as Obj).persistentVolumeClaim.claimName).to.equal(pvc.metadata.name);
      const env = new Map(c.env.map((e: Obj) => [e.name, e]));
      for (const key of ['DATABASE_URL', 'SVC_SECRET_KEY']) {
        const ref = (env.get(key) as Obj).valueFrom.secretKeyRef;
        expect(ref.name).to.equal('TPL'); // the chart's Secret, or the one named in values
        expect(Object.keys(secret.stringData)).to.include(key);
      }
      expect((env.get('SVC_DATA_DIR') as Obj).value).to.equal('/var/lib/svc');
      expect((env.get('SVC_K8S_NAMESPACE') as Obj).value).to.equal('TPL');
    }
  });

  it('the Service selects the api pods on the named port; the Ingress routes to that Service and port', () => {
    const svc = byKind('Service')[0]!;
    const api = byKind('Deployment').find((d) => d.metadata.labels['app.kubernetes.io/component'] === 'api')!;
    for (const [k, v] of Object.entries(svc.spec.selector)) expect(api.spec.template.metadata.labels[k], k).to.equal(v);
    expect(svc.spec.ports[0].targetPort).to.equal('http');
    const ing = byKind('Ingress')[0]!;
    expect(ing.apiVersion).to.equal('networking.k8s.io/v1');
    const backend = ing.spec.rules[0].http.paths[0].backend.service;
    expect(backend.name).to.equal(svc.metadata.name);
    expect(backend.port.name).to.equal(svc.spec.ports[0].name);
    expect(ing.spec.rules[0].http.paths[0].pathType).to.equal('Prefix');
  });

  it('the migration Job is a Helm hook running svc-server migrate', () => {
    const job = byKind('Job')[0]!;
    expect(job.apiVersion).to.equal('batch/v1');
    expect(job.metadata.annotations['helm.sh/hook'].split(',')).to.include.members(['post-install', 'pre-upgrade']);
    expect(job.metadata.annotations['helm.sh/hook-delete-policy']).to.contain('before-hook-creation');
    expect(job.spec.template.spec.restartPolicy).to.be.oneOf(['OnFailure', 'Never']);
    expect(job.spec.template.spec.containers[0].args).to.deep.equal(['migrate']);
  });

  it('RBAC: a Role in one namespace for the sandbox provider (pods, services, their secrets; no wildcards), bound to the chart ServiceAccount', () => {
    const role = byKind('Role')[0]!;
    expect(role.apiVersion).to.equal('rbac.authorization.k8s.io/v1');
    expect(role.metadata.namespace).to.equal('TPL');
    for (const rule of role.rules) {
      expect(rule.apiGroups).to.deep.equal(['']);
      expect(rule.resources.every((r: string) => ['pods', 'services', 'secrets'].includes(r))).to.equal(true);
      expect(rule.verbs).to.not.include('*');
    }
    const rb = byKind('RoleBinding')[0]!;
    expect(rb.roleRef).to.deep.equal({ apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: role.metadata.name });
    expect(rb.subjects).to.deep.equal([{ kind: 'ServiceAccount', name: 'TPL', namespace: 'TPL' }]);
    expect(byKind('ClusterRole')).to.deep.equal([]);
  });

  it('NetworkPolicy: sandbox pods get no pod-to-pod traffic; in only from the server on the daemon port, out only to the api and DNS', () => {
    const [np] = byKind('NetworkPolicy');
    expect(np!.apiVersion).to.equal('networking.k8s.io/v1');
    expect(np!.metadata.namespace).to.equal('TPL'); // the sandbox namespace, as the Role
    // Selects exactly what the kubernetes provider labels every sandbox pod with.
    expect(np!.spec.podSelector).to.deep.equal({ matchLabels: { [LABEL.managedBy]: 'svc' } });
    expect(sandboxLabels({ sandboxId: 's', sessionId: 'x', projectId: 'p', labels: {} })[LABEL.managedBy]).to.equal('svc');
    expect(np!.spec.policyTypes).to.have.members(['Ingress', 'Egress']);
    // Ingress: one rule, from the chart's own pods only (not from other sandbox pods), on 8000.
    expect(np!.spec.ingress).to.have.length(1);
    const from = np!.spec.ingress[0].from;
    expect(from.every((f: Obj) => f.podSelector?.matchLabels?.['app.kubernetes.io/name'] === 'svc' && !f.podSelector.matchLabels['svc.managed-by'])).to.equal(true);
    expect(np!.spec.ingress[0].ports).to.deep.equal([{ protocol: 'TCP', port: 8000 }]);
    // Egress: the api pods on their container port, and DNS; nothing else (no ipBlock, no open rule).
    const egress = np!.spec.egress as Obj[];
    expect(egress).to.have.length(2);
    for (const rule of egress) {
      expect(rule.to, 'every egress rule names its peers').to.be.an('array').that.is.not.empty;
      for (const peer of rule.to) expect(peer).to.not.have.property('ipBlock');
    }
    const api = byKind('Deployment').find((d) => d.spec.template.spec.containers[0].args[0] === 'api')!;
    expect(egress[0]!.to[0].podSelector.matchLabels).to.deep.equal(api.spec.template.metadata.labels);
    expect(egress[0]!.ports).to.deep.equal([{ protocol: 'TCP', port: api.spec.template.spec.containers[0].ports[0].containerPort }]);
    expect(egress[1]!.to[0].podSelector.matchLabels).to.deep.equal({ 'k8s-app': 'kube-dns' });
    expect(egress[1]!.ports.map((p: Obj) => `${p.protocol}/${p.port}`)).to.have.members(['UDP/53', 'TCP/53']);
  });

  it('the PVC asks for storage with an access mode', () => {
    const pvc = byKind('PersistentVolumeClaim')[0]!;
    expect(pvc.spec.accessModes).to.have.length(1);
    expect(pvc.spec.resources.requests.storage).to.equal('TPL');
  });

  it('every .Values path a template reads exists in values.yaml', () => {
    const missing: string[] = [];
    for (const file of readdirSync(path.join(chart, 'templates'))) {
      const text = readFileSync(path.join(chart, 'templates', file), 'utf8');
      for (const m of text.matchAll(/\.Values\.([A-Za-z0-9_.]+)/g)) {
        let v: any = values;
        for (const part of m[1]!.split('.')) v = v === undefined || v === null ? undefined : v[part];
        if (v === undefined) missing.push(`${file}: .Values.${m[1]}`);
      }
    }
    expect(missing).to.deep.equal([]);
  });
});
