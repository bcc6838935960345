import net from 'node:net';

/**
 * `10.0.0.0/8, 127.0.0.1, ::1/128` as a BlockList (a bare address is its own /32 or
 * /128); null for an empty list. A bad entry throws, naming it (config validation calls
 * this, so a typo stops the server at start-up instead of trusting nobody, or everybody).
 */
export function parseCidrList(spec: string): net.BlockList | null {
  const entries = spec
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (entries.length === 0) return null;
  const list = new net.BlockList();
  for (const e of entries) {
    const [addr, bits, extra] = e.split('/');
    const family = net.isIP(addr ?? '');
    if (!family || extra !== undefined) throw new Error(`not an address or CIDR: ${e}`);
    const max = family === 4 ? 32 : 128;
    const prefix = bits === undefined ? max : /^\d{1,3}$/.test(bits) ? Number(bits) : NaN;
    if (!(prefix >= 0 && prefix <= max)) throw new Error(`bad prefix length: ${e}`);
    list.addSubnet(addr!, prefix, family === 4 ? 'ipv4' : 'ipv6');
  }
  return list;
}
