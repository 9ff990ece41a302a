import { isIP } from 'node:net';

/**
 * The SSRF guard for outbound requests to user-supplied URLs (DESIGN.md section 8): a host is
 * refused when any address it resolves to is loopback, private, link-local, reserved or multicast,
 * unless the host name (or literal address) is on the allow-list.
 */
export interface HostPolicy {
  /** Host names or literal addresses that skip the address check (case-insensitive, no port). */
  allowedHosts: readonly string[];
}

function ipv4ToInt(ip: string): number {
  return ip.split('.').reduce((acc, part) => (acc << 8) + Number(part), 0) >>> 0;
}

const BLOCKED_V4: Array<[string, number]> = [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, cloud metadata
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved + broadcast
];

function isBlockedV4(ip: string): boolean {
  const n = ipv4ToInt(ip);
  return BLOCKED_V4.some(([base, bits]) => {
    const mask = bits === 0 ? 0 : (~0 << (32 - bits)) >>> 0;
    return (n & mask) === (ipv4ToInt(base) & mask);
  });
}

function expandV6(ip: string): number[] | null {
  let addr = ip.toLowerCase();
  const zone = addr.indexOf('%');
  if (zone >= 0) addr = addr.slice(0, zone);
  // An embedded IPv4 tail (::ffff:1.2.3.4) becomes two hextets.
  const v4 = addr.match(/(\d+\.\d+\.\d+\.\d+)$/);
  if (v4) {
    const n = ipv4ToInt(v4[1]!);
    addr = addr.slice(0, -v4[1]!.length) + `${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}`;
  }
  const [head, tail] = addr.split('::') as [string, string | undefined];
  const h = head ? head.split(':') : [];
  const t = tail !== undefined && tail !== '' ? tail.split(':') : [];
  const fill = tail === undefined ? 0 : 8 - h.length - t.length;
  if (fill < 0) return null;
  const parts = [...h, ...Array(fill).fill('0'), ...t].map((p) => parseInt(p, 16));
  return parts.length === 8 && parts.every((p) => Number.isInteger(p) && p >= 0 && p <= 0xffff) ? parts : null;
}

function isBlockedV6(ip: string): boolean {
  const p = expandV6(ip);
  if (!p) return true;
  const allZeroUpTo = (n: number) => p.slice(0, n).every((x) => x === 0);
  if (allZeroUpTo(7) && (p[7] === 0 || p[7] === 1)) return true; // :: and ::1
  if (allZeroUpTo(5) && p[5] === 0xffff) {
    // IPv4-mapped: judge the IPv4 address.
    return isBlockedV4(`${p[6]! >>> 8}.${p[6]! & 0xff}.${p[7]! >>> 8}.${p[7]! & 0xff}`);
  }
  if (allZeroUpTo(6)) return true; // deprecated IPv4-compatible
  if (p[0] === 0x64 && p[1] === 0xff9b) return true; // NAT64 can reach private IPv4
  const first = p[0]!;
  if ((first & 0xfe00) === 0xfc00) return true; // fc00::/7 unique local
  if ((first & 0xffc0) === 0xfe80) return true; // fe80::/10 link-local
  if ((first & 0xffc0) === 0xfec0) return true; // fec0::/10 site-local (deprecated)
  if ((first & 0xff00) === 0xff00) return true; // multicast
  if (first === 0x2001 && p[1] === 0x0db8) return true; // documentation
  if (first === 0x2002) return true; // 6to4 may embed private IPv4
  return false;
}

/** Whether a literal IP address is in a range outbound requests must not reach. */
export function isBlockedAddress(ip: string): boolean {
  const family = isIP(ip);
  if (family === 4) return isBlockedV4(ip);
  if (family === 6) return isBlockedV6(ip);
  return true;
}

export function normalizeHost(host: string): string {
  return host.trim().toLowerCase().replace(/^\[(.*)\]$/, '$1').replace(/\.$/, '');
}

export function isHostAllowListed(host: string, policy: HostPolicy): boolean {
  const h = normalizeHost(host);
  return policy.allowedHosts.some((a) => normalizeHost(a) === h);
}

/** Parses a comma-separated allow-list setting. */
export function parseHostList(value: string | undefined | null): string[] {
  return (value ?? '')
    .split(',')
    .map((s) => normalizeHost(s.replace(/:\d+$/, '')))
    .filter(Boolean);
}
