/** Typo suggestions ("did you mean ..."), for `svc` and `svc-server` alike. */

/** Optimal string alignment distance: insertions, deletions, substitutions, adjacent swaps. */
function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, d[i - 2]![j - 2]! + 1);
      d[i]![j] = v;
    }
  }
  return d[a.length]![b.length]!;
}

/** The name whose spelling (or an alias's) is within 1 edit of a short word, 2 of a longer one. */
export function closest(word: string, names: Array<{ name: string; words: string[] }>): string | undefined {
  const w = word.toLowerCase();
  const limit = w.length <= 4 ? 1 : 2;
  let best: { name: string; d: number } | undefined;
  for (const n of names) {
    for (const name of n.words) {
      const d = editDistance(w, name);
      if (d <= limit && (!best || d < best.d)) best = { name: n.name, d };
    }
  }
  return best?.name;
}
