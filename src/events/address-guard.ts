import type { LookupAddress, LookupOptions } from "node:dns";
import dns from "node:dns";
import ipaddr from "ipaddr.js";

/**
 * The outbound webhook SSRF guard. An endpoint URL must be https and reach
 * public unicast addresses only: loopback, private, link-local, unique-local,
 * carrier-grade NAT, multicast, reserved and translation ranges are refused,
 * including IPv4 addresses written inside IPv6 (`::ffff:10.0.0.1`). Names are
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

/** True for a public unicast IPv4 or IPv6 address. */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  let ip = ipaddr.parse(address);
  if (ip.kind() === "ipv6") {
    const v6 = ip as ipaddr.IPv6;
    if (v6.isIPv4MappedAddress()) ip = v6.toIPv4Address();
  }
  return ip.range() === "unicast";
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
    if (!isPublicAddress(host)) throw new UnsafeUrlError("must not point at a private or reserved address");
    return url.toString();
  }
  let addresses: LookupAddress[];
  try {
    addresses = await (options.resolve ?? systemResolve)(host);
  } catch {
    throw new UnsafeUrlError("its host name does not resolve");
  }
  if (addresses.length === 0) throw new UnsafeUrlError("its host name does not resolve");
  if (addresses.some((a) => !isPublicAddress(a.address))) {
    throw new UnsafeUrlError("its host name resolves to a private or reserved address");
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
