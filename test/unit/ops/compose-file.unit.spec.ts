import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { projectRoot } from '../../../lib/paths.js';

/**
 * ops/compose.yaml as written (the compose e2e brings it up in CI): no privileged service;
 * the two that run bwrap sandboxes get the seccomp profile, AppArmor unconfined, and an
 * entrypoint that ends as uid 1000 with no capabilities.
 */
interface Service {
  privileged?: boolean;
  user?: string;
  cap_add?: string[];
  security_opt?: string[];
  entrypoint?: string[];
}

describe('ops/compose.yaml', () => {
  const compose = parse(readFileSync(path.join(projectRoot, 'ops', 'compose.yaml'), 'utf8'), { merge: true }) as { services: Record<string, Service> };
  const profile = JSON.parse(readFileSync(path.join(projectRoot, 'ops', 'seccomp-sandboxes.json'), 'utf8')) as { defaultAction: string; syscalls: { names: string[]; action: string }[] };

  it('runs no service privileged; api and worker get the seccomp profile, AppArmor unconfined and drop to uid 1000 without capabilities', () => {
    for (const [name, svc] of Object.entries(compose.services)) expect(svc.privileged, name).to.not.equal(true);
    for (const name of ['api', 'worker']) {
      const svc = compose.services[name]!;
      expect(svc.security_opt, name).to.include.members(['no-new-privileges:true', 'apparmor=unconfined', 'seccomp:${SVC_COMPOSE_DIR:-./ops}/seccomp-sandboxes.json']);
      expect(svc.cap_add, name).to.deep.equal(['SYS_ADMIN']);
      const script = (svc.entrypoint ?? []).join('\n');
      expect(script).to.include('mount -t proc -o nosuid,nodev,noexec proc /run/svc-proc/proc');
      expect(script).to.include('chmod 700 /run/svc-proc');
      expect(script).to.match(/exec setpriv --reuid 1000 --regid 1000 --clear-groups --inh-caps=-all --bounding-set=-all --no-new-privs -- node /);
    }
    for (const name of ['postgres', 'migrate']) expect(compose.services[name]!.cap_add, name).to.equal(undefined);
  });

  it('the seccomp profile refuses what nothing needs and leaves what bwrap needs', () => {
    const denied = new Set(profile.syscalls.filter((r) => r.action === 'SCMP_ACT_ERRNO').flatMap((r) => r.names));
    for (const s of ['kexec_load', 'init_module', 'finit_module', 'bpf', 'perf_event_open', 'keyctl', 'add_key', 'userfaultfd', 'open_by_handle_at', 'io_uring_setup', 'reboot']) expect(denied.has(s), s).to.equal(true);
    for (const s of ['unshare', 'clone', 'clone3', 'mount', 'umount2', 'pivot_root', 'setns']) expect(denied.has(s), s).to.equal(false);
    expect(profile.defaultAction).to.equal('SCMP_ACT_ALLOW');
  });
});
