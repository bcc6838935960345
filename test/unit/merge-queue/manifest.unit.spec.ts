import { expect } from 'chai';
import { parseManifest } from '../../../domain/manifest/parse.js';

describe('[merge_queue] in the manifest', () => {
  it('off by default; enabled with max_batch 4 unless given', () => {
    expect(parseManifest('').manifest!.merge_queue).to.deep.equal({ enabled: false, max_batch: 4 });
    expect(parseManifest('[merge_queue]\nenabled = true\n').manifest!.merge_queue).to.deep.equal({ enabled: true, max_batch: 4 });
    expect(parseManifest('[merge_queue]\nenabled = true\nmax_batch = 8\n').manifest!.merge_queue).to.deep.equal({ enabled: true, max_batch: 8 });
  });

  it('refuses a max_batch that is not an integer 1-32 or an enabled that is not a boolean; warns on an unknown key', () => {
    const bad = (toml: string) => parseManifest(toml).errors.map((e) => e.path);
    expect(bad('[merge_queue]\nmax_batch = 0\n')).to.deep.equal(['merge_queue.max_batch']);
    expect(bad('[merge_queue]\nmax_batch = 33\n')).to.deep.equal(['merge_queue.max_batch']);
    expect(bad('[merge_queue]\nmax_batch = 2.5\n')).to.deep.equal(['merge_queue.max_batch']);
    expect(bad('[merge_queue]\nenabled = "yes"\n')).to.deep.equal(['merge_queue.enabled']);
    expect(parseManifest('[merge_queue]\nenabled = true\nspeed = 9\n').warnings.map((w) => w.path)).to.deep.equal(['merge_queue.speed']);
  });
});
