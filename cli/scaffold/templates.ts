/**
 * What `svc init` writes, as data: path (relative to the project root) -> content. The
 * agent config dir is `.svc/agent` (the manifest's `[agent] config_dir` default).
 */
import { OPEN_CR_SH, SKILL_MD } from './skill.js';

export interface Template {
  path: string;
  content: string;
  executable?: boolean;
}

export const SVC_TOML = `# svc.toml: the project manifest. Changes to it reach the service only after the change
# request that contains them is merged into the default branch.

[agent]
# Where sessions find agents (agents/<name>.md) and skills (skills/<name>/SKILL.md).
config_dir = ".svc/agent"

[env]
# Secret names sessions and apps need. Values live in the project's secrets, never here:
#   svc secrets set OPENAI_API_KEY=-
# Names starting with SVC_ are reserved.
required = []
# required = ["OPENAI_API_KEY"]

# A scheduled session: fires on a 5-field cron in the server's time zone when enabled.
[[triggers]]
slug = "nightly-deps"
schedule = "0 3 * * *"
prompt = "Update outdated dependencies, run the tests, and open a change request."
enabled = false

# A long-running app, redeployed when this entry changes on the default branch.
# [[apps]]
# name = "web"
# command = "npm start"
# port = 3000
# health_path = "/healthz"
# public = true   # anyone may open it; without it, only the project's members
`;

export const DOCKERFILE = `# The sandbox image for this project's sessions. It starts from the install's sandbox image
# (the daemon, the CLI and git under the layout sessions expect; the docker provider passes
# its image as SVC_SANDBOX_IMAGE) and adds your toolchain.
ARG SVC_SANDBOX_IMAGE=svc-sandbox:local
FROM \${SVC_SANDBOX_IMAGE}

# RUN apt-get update && apt-get install -y --no-install-recommends python3 && rm -rf /var/lib/apt/lists/*
`;

export const DEFAULT_AGENT_MD = `---
description: The default agent of this project's sessions.
---

You work in a sandbox on your own session branch (\`$SVC_BRANCH_NAME\`). Follow the \`svc\`
skill (skills/svc/SKILL.md) for every change: small commits, \`git push origin HEAD\`,
\`svc cr open\`, show the CR number, stop. You never merge your own change request, and
nothing you commit reaches the default branch except through a change request a person
merges.
`;

export const AGENTS_MARKER = '<!-- svc:agent-contract -->';

export const AGENTS_BLOCK = `${AGENTS_MARKER}
## Shipping changes (svc)

This project is hosted on svc: work reaches the default branch only through a change
request a person merges. Read and follow \`.svc/agent/skills/svc/SKILL.md\` before you
commit: small commits on your branch, \`git push origin HEAD\`, \`svc cr open\`, report the
CR number, stop. Never merge your own CR, never force-push.
`;

export const AGENTS_MD = `# Agent instructions\n\n${AGENTS_BLOCK}`;

/** Every file `svc init` owns outright (AGENTS.md is handled apart: it may be the user's). */
export function templates(): Template[] {
  return [
    { path: 'svc.toml', content: SVC_TOML },
    { path: '.svc/Dockerfile', content: DOCKERFILE },
    { path: '.svc/agent/agents/default.md', content: DEFAULT_AGENT_MD },
    { path: '.svc/agent/skills/svc/SKILL.md', content: SKILL_MD },
    { path: '.svc/agent/skills/svc/scripts/open-cr.sh', content: OPEN_CR_SH, executable: true },
    // The same skill where local coding agents look for skills.
    { path: '.claude/skills/svc/SKILL.md', content: SKILL_MD },
    { path: '.claude/skills/svc/scripts/open-cr.sh', content: OPEN_CR_SH, executable: true },
    { path: '.opencode/skill/svc/SKILL.md', content: SKILL_MD },
    { path: '.opencode/skill/svc/scripts/open-cr.sh', content: OPEN_CR_SH, executable: true },
  ];
}
