/**
 * The system skill `svc init` writes to `.svc/agent/skills/svc/SKILL.md` (and wires into
 * the local coding-agent config locations): the agent contract in full, as the spec states
 * it ("What the service does" 4-7, "Conflict recovery"). Tests check it says all of it.
 */
export const SKILL_MD = `---
name: svc
description: How work leaves this sandbox. Use for every change you commit, push or want merged in a project hosted on svc (change requests, session branch, conflicts).
---

# Shipping work on svc: the change-request contract

You are working in a project hosted on **svc**. The only path by which your work reaches
the default branch (\`$SVC_DEFAULT_BRANCH\`, usually \`main\`) is a **change request (CR)
that a person merges**. Nothing else writes the default branch: the server refuses any
push to it, and it refuses rewriting your session branch. There is no exception for small
changes.

## The contract (every time)

1. **Commit small working commits on your session branch**, \`$SVC_BRANCH_NAME\` (the
   same value as \`$SVC_SESSION_ID\`). Never rewrite history: no \`git rebase\` of pushed
   commits, no \`git commit --amend\` of pushed commits, no \`git push --force\`.
2. **Push the branch**: \`git push origin HEAD\`.
3. **Open a CR**: \`svc cr open --title "<what and why>" --description "<details>"\`
   (inside a session the head branch, project and session come from the environment).
   If a CR for this branch is already open, just push: the open CR follows the branch.
4. **Show the CR number to the user** (\`#<n>\` and its URL, exactly as \`svc cr open\`
   prints them: the URL is on the dashboard the user opens, \`$SVC_DASHBOARD_URL\`). Never
   give the user a \`127.0.0.1\` or \`localhost:4080\` address from this sandbox (its gateway):
   only the sandbox reaches it.
5. **Stop.** Hand back to the user.

**You never merge your own CR.** Merging is done by the user, from the dashboard or with
\`svc cr merge <n>\`. Do not run \`svc cr merge\`, do not push to the default branch, do not
ask for the rules to be bent.

## Stacking: big work as a chain of reviewable CRs

When a change is too big to review in one piece (a refactor, then the feature on it, then
its docs), split it into a **stack**: each CR based on the one before it, each small
enough to read on its own.

1. The first step is your session branch, as always: commit, \`git push origin HEAD\`,
   \`svc cr open --title "<step 1>"\` (based on the default branch).
2. Each next step gets a **stack branch** named \`$SVC_BRANCH_NAME-<n>\` (n from 1 to 20,
   a dash, not a slash): \`git checkout -b "$SVC_BRANCH_NAME-1"\`, commit, then
   \`git push origin HEAD\` and open its CR **with \`--base\`** set to the branch below it:
   \`svc cr open --head "$SVC_BRANCH_NAME-1" --base "$SVC_BRANCH_NAME" --title "<step 2>"\`,
   then \`--head "$SVC_BRANCH_NAME-2" --base "$SVC_BRANCH_NAME-1"\`, and so on. Without
   \`--base\` a CR is based on the default branch and its diff would repeat the steps
   below it.
3. Only your own branches: the server refuses any other stack branch name, and a CR
   from a stack branch must be based on your session branch or another of your stack
   branches. Stack branches, like your session branch, are never rewritten: new commits
   on top only.
4. \`svc cr stack <n>\` shows the chain. The person merges the stack (bottom-up) or one CR
   at a time; when a CR below merges, the server moves the next one onto the default
   branch by itself. You never change a CR's base: a person does.

Stack only when the steps make sense on their own; one coherent change is one CR.

## What the rule covers

Every committed file goes through a CR: code, tests, docs, **new skills, agents,
commands, tools and plugins**, edits to \`svc.toml\`, agent-instruction files
(\`AGENTS.md\`, \`SKILL.md\`, \`CLAUDE.md\`) and tool-server configs.

Consequences you must expect (and tell the user about when relevant):

- New files under the agent config dir (skills at \`.svc/agent/skills/<name>/SKILL.md\`,
  agents at \`.svc/agent/agents/<agent>.md\`) reach **future sessions only after the CR
  containing them merges** to the default branch.
- Edits to \`[[triggers]]\` in \`svc.toml\` reach the scheduler only after merge: the
  scheduler reads the manifest on the default branch.
- \`[[apps]]\` redeploys are driven by manifest changes on the default branch, so they
  happen after merge, not before.
- Secrets are not in the repository and CRs do not move them: they live in the project's
  secrets (\`svc secrets ls\`, \`svc secrets set NAME=-\`). Never commit a secret.
- A session spawned by a trigger opens its CR by the same flow.

## Anti-patterns (never rely on them)

- Force-pushing the default branch (or any branch you pushed).
- Leaving work only on the session branch without a CR: the sandbox is disposable, and
  only committed, pushed work in a CR reaches anyone.
- Shipping changes as a tarball, a paste or a gist instead of commits in a CR.

## Conflict recovery

When \`svc cr show <n>\` reports conflicts (or a merge fails with "Merge failed"):

1. On your session branch, merge the base into it: \`git pull origin <base_ref>\`
   (usually \`git pull origin "$SVC_DEFAULT_BRANCH"\`). Do not rebase.
2. Resolve the conflicts locally, run the tests, and commit the merge.
3. Push: \`git push origin HEAD\`.
4. Run \`svc cr show <n>\` and confirm the preview is clean.
5. Hand back to the user to merge. Do not merge to force the resolution.

## Tools

- \`svc cr open --title ...\` opens a CR (\`--head\`/\`--base\` for a stacked one); \`svc cr ls\`,
  \`svc cr show <n>\`, \`svc cr diff <n>\`, \`svc cr stack <n>\` inspect them.
- \`scripts/open-cr.sh "<title>" ["<description>"]\` (next to this file) pushes the current
  branch and opens its CR in one step.
- If \`git push\` prints \`the default branch moves only through change requests\`, you
  pushed to the default branch: push your session branch instead and open a CR.
- If it prints \`no rewriting history\`, you tried to force-push or delete a session
  branch: make a new commit on top instead.
`;

export const OPEN_CR_SH = `#!/bin/sh
# Pushes the current branch and opens its change request (svc skill tool).
# Usage: open-cr.sh "<title>" ["<description>"]
set -eu
if [ "$#" -lt 1 ] || [ -z "$1" ]; then
  echo 'usage: open-cr.sh "<title>" ["<description>"]' >&2
  exit 2
fi
git push origin HEAD
svc cr open --title "$1" --description "\${2:-}"
`;
