/**
 * Which lines of a unified patch a review comment may sit on: per file, the old-side
 * (LEFT: deleted and context lines) and new-side (RIGHT: added and context lines) numbers
 * inside its hunks, as GitHub's review comments allow. Pure; used to check a comment's
 * anchor and to place comments on the rendered diff.
 */
export interface FileLines {
  left: Set<number>;
  right: Set<number>;
}

/** The path a `diff --git` section names (its new path, else its old one). */
function pathOf(lines: string[]): string {
  const plus = lines.find((l) => l.startsWith('+++ '));
  const minus = lines.find((l) => l.startsWith('--- '));
  let path = plus && plus !== '+++ /dev/null' ? plus.slice(4) : minus ? minus.slice(4) : '';
  path = path.replace(/^"?[ab]\//, '').replace(/"$/, '');
  if (!path) {
    const m = /^diff --git a\/(.*) b\/(.*)$/.exec(lines[0] ?? '');
    path = m ? m[2]! : '';
  }
  return path;
}

export function commentableLines(patch: string): Map<string, FileLines> {
  const out = new Map<string, FileLines>();
  for (const chunk of patch.split(/^(?=diff --git )/m)) {
    if (!chunk.startsWith('diff --git ')) continue;
    const lines = chunk.replace(/\n$/, '').split('\n');
    const f: FileLines = { left: new Set(), right: new Set() };
    let oldNo = 0;
    let newNo = 0;
    let inHunk = false;
    for (const line of lines) {
      if (line.startsWith('@@')) {
        const m = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(line);
        oldNo = m ? Number(m[1]) : 0;
        newNo = m ? Number(m[2]) : 0;
        inHunk = true;
        continue;
      }
      if (!inHunk) continue;
      const c = line[0];
      if (c === '+') f.right.add(newNo++);
      else if (c === '-') f.left.add(oldNo++);
      else if (c === '\\') continue;
      else {
        f.left.add(oldNo++);
        f.right.add(newNo++);
      }
    }
    out.set(pathOf(lines), f);
  }
  return out;
}
