import type { LookupAddress, LookupOptions } from "node:dns";
import dns from "node:dns";
import ipaddr from "ipaddr.js";

/**
 * The outbound webhook SSRF guard. An endpoint URL must be https and reach
 * public unicast addresses only: unspecified, loopback, private, link-local,
 * site-local, unique-local, carrier-grade NAT, multicast, broadcast, reserved
 * and documentation ranges are refused, and so is every IPv6 form that carries
 * an IPv4 address (IPv4-compatible, NAT64, 6to4, Teredo) but IPv4-mapped
 * addresses of public IPv4 hosts (`::ffff:8.8.8.8`). Names are
 * checked by what they resolve to, when the endpoint is saved and again on
 * every connection (the connection goes to the address that was checked, so a
 * name that changes its answer between the two cannot slip through).
 * `WEBHOOK_ALLOW_PRIVATE=true` lifts the address rule and allows plain http.
 */

export class UnsafeUrlError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UnsafeUrlError";
  }
}

/**
 * IPv6 ranges refused besides every range ipaddr.js names: addresses that
 * carry an IPv4 address (IPv4-compatible `::a.b.c.d`, NAT64 in both its
 * well-known and local-use prefixes, 6to4, Teredo) can lead to any IPv4
 * address, so they are refused whole rather than decoded; site-local is
 * deprecated but may still route inside a network.
 */
const REFUSED_V6: Array<[string, string]> = [
  ["::/96", "IPv4-compatible"],
  ["::ffff:0:0/96", "IPv4-mapped"],
  ["64:ff9b::/96", "NAT64"],
  ["64:ff9b:1::/48", "NAT64 (local use)"],
  ["2002::/16", "6to4"],
  ["2001::/32", "Teredo"],
  ["fec0::/10", "site-local"],
  ["fc00::/7", "unique local"],
  ["fe80::/10", "link-local"],
  ["ff00::/8", "multicast"],
];
const REFUSED_V6_RANGES = REFUSED_V6.map(([cidr, name]) => [ipaddr.IPv6.parseCIDR(cidr), name] as const);
/** Only global unicast (2000::/3) is public; the rest of IPv6 is unassigned or special. */
const GLOBAL_UNICAST = ipaddr.IPv6.parseCIDR("2000::/3");

/**
 * Why an address is not a public unicast address (the name of its special
 * range), or null when it is public.
 */
export function specialRangeOf(address: string): string | null {
  if (!ipaddr.isValid(address)) return "not an IP address";
  const ip = ipaddr.parse(address);
  if (ip.kind() === "ipv4") {
    const range = (ip as ipaddr.IPv4).range();
    return range === "unicast" ? null : range;
  }
  const v6 = ip as ipaddr.IPv6;
  // A zone (`fe80::1%eth0`) only exists on link-local addresses.
  if (v6.zoneId) return "scoped";
  if (v6.isIPv4MappedAddress()) {
    const inner = specialRangeOf(v6.toIPv4Address().toString());
    return inner === null ? null : `IPv4-mapped ${inner}`;
  }
  const range = v6.range();
  if (range !== "unicast") return range;
  for (const [cidr, name] of REFUSED_V6_RANGES) if (v6.match(cidr)) return name;
  if (!v6.match(GLOBAL_UNICAST)) return "not global unicast";
  return null;
}

/** True for a public unicast IPv4 or IPv6 address. */
export function isPublicAddress(address: string): boolean {
  return specialRangeOf(address) === null;
}

/** The URL's host without IPv6 brackets. */
const hostOf = (url: URL) => url.hostname.replace(/^\[(.*)\]$/, "$1");

export type Resolve = (host: string) => Promise<LookupAddress[]>;

const systemResolve: Resolve = (host) => dns.promises.lookup(host, { all: true, verbatim: true });

export const MAX_URL_LENGTH = 2048;

/**
 * Checks an endpoint URL; throws UnsafeUrlError saying what is wrong. Returns
 * the normalised URL.
 */
export async function checkWebhookUrl(
  raw: string,
  options: { allowPrivate: boolean; resolve?: Resolve },
): Promise<string> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UnsafeUrlError("must be an absolute URL");
  }
  if (raw.length > MAX_URL_LENGTH) throw new UnsafeUrlError(`must be at most ${MAX_URL_LENGTH} characters`);
  const schemes = options.allowPrivate ? ["https:", "http:"] : ["https:"];
  if (!schemes.includes(url.protocol)) {
    throw new UnsafeUrlError(options.allowPrivate ? "must be an http or https URL" : "must be an https URL");
  }
  if (url.username || url.password) throw new UnsafeUrlError("must not contain credentials");
  if (options.allowPrivate) return url.toString();

  const host = hostOf(url);
  if (ipaddr.isValid(host)) {
    const range = specialRangeOf(host);
    if (range) throw new UnsafeUrlError(`must not point at a private or reserved address (${range})`);
    return url.toString();
  }
  let addresses: LookupAddress[];
  try {
    addresses = await (options.resolve ?? systemResolve)(host);
  } catch {
    throw new UnsafeUrlError("its host name does not resolve");
  }
  if (addresses.length === 0) throw new UnsafeUrlError("its host name does not resolve");
  const special = addresses.map((a) => specialRangeOf(a.address)).find((range) => range !== null);
  if (special) {
    throw new UnsafeUrlError(`its host name resolves to a private or reserved address (${special})`);
  }
  return url.toString();
}

type LookupCallback = (
  error: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/**
 * A `lookup` for http(s).request that resolves the name and refuses the
 * connection when any answer is not public, so the socket only ever reaches an
 * address that passed the check.
 */
export function guardedLookup(allowPrivate: boolean, resolve: Resolve = systemResolve) {
  return (hostname: string, options: LookupOptions, callback: LookupCallback) => {
    resolve(hostname)
      .then((addresses) => {
        const usable = options.family ? addresses.filter((a) => a.family === options.family) : addresses;
        if (usable.length === 0) {
          callback(Object.assign(new Error(`${hostname} does not resolve`), { code: "ENOTFOUND" }), []);
          return;
        }
        if (!allowPrivate && addresses.some((a) => !isPublicAddress(a.address))) {
          callback(
            Object.assign(new UnsafeUrlError(`${hostname} resolves to a private or reserved address`), {
              code: "EADDRNOTAVAIL",
            }),
            [],
          );
          return;
        }
        if (options.all) callback(null, usable);
        else callback(null, usable[0]!.address, usable[0]!.family);
      })
      .catch((error: NodeJS.ErrnoException) => callback(error, []));
  };
}
