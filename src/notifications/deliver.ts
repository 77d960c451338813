// One notification request (docs/notifications.md, "Delivery"): POSTed with its delivery id and, with a token,
// its HMAC-SHA512 signature; no redirect followed; a time-out on the whole exchange; the receiver's body read
// to its first 1,024 bytes. The address is judged where the socket connects (a name that re-resolves to a
// refused address since the configuration was made is caught here), and again once connected.
import { createHmac } from 'node:crypto';
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import type { DeliveryResponse } from '../store/state-store.js';
import { allowListed, refusedAddress, type DestinationPolicy } from './destination.js';

export interface DeliveryRequest {
  url: string;
  body: string;
  deliveryId: string;
  token: string | null;
  attempt: number;
  userAgent: string;
  timeoutMs: number;
  policy: DestinationPolicy;
  /** Resolves names for the connection (the system's resolver unless a test gives another). */
  lookup?: LookupFunction;
}

const BODY_KEPT = 1024;

/** The hex HMAC-SHA512 of the body keyed by the configuration's token. */
export const signature = (token: string, body: string) => createHmac('sha512', token).update(body, 'utf8').digest('hex');

/** A lookup that refuses to hand the socket a refused address. */
function guardedLookup(base: LookupFunction): LookupFunction {
  return (hostname, options, callback) => {
    base(hostname, options, (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => {
      if (error) return callback(error, address as string, family);
      const all = Array.isArray(address) ? address.map((a) => a.address) : [address];
      const refused = all.find(refusedAddress);
      if (refused !== undefined) return callback(Object.assign(new Error(`${hostname} resolves to ${refused}, a refused address`), { code: 'EREFUSEDADDRESS' }), address as string, family);
      return callback(null, address as string, family);
    });
  };
}

/** Sends the request and describes its outcome as `delivery-responses` shows it; never throws. */
export async function deliver(req: DeliveryRequest): Promise<DeliveryResponse> {
  const sentAt = new Date().toISOString();
  const failed = (why: string): DeliveryResponse => ({ url: req.url, code: null, body: why, headers: {}, sentAt, successful: false, attempt: req.attempt });
  let url: URL;
  try { url = new URL(req.url); } catch { return failed('the url is not an absolute URL'); }
  const listed = allowListed(url, req.policy);
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  if (!listed && isIP(host) !== 0 && refusedAddress(host)) return failed(`${host} is a refused address`);
  const headers: Record<string, string> = {
    'Content-Type': 'application/json',
    'User-Agent': req.userAgent,
    'X-Explorer-Delivery': req.deliveryId,
    'Content-Length': String(Buffer.byteLength(req.body)),
  };
  if (req.token) headers['X-Explorer-Notification-Signature'] = signature(req.token, req.body);
  const lookup = req.lookup ?? (dnsLookup as unknown as LookupFunction);
  return new Promise<DeliveryResponse>((resolve) => {
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const request = send(url, {
      method: 'POST', headers, signal: AbortSignal.timeout(req.timeoutMs),
      ...(listed ? {} : { lookup: guardedLookup(lookup) }),
    }, (res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      let kept = 0;
      res.on('data', (chunk: Buffer) => {
        if (kept < BODY_KEPT) { chunks.push(chunk); kept += chunk.length; }
        if (kept >= BODY_KEPT) res.destroy(); // a receiver may stream forever: the rest is not read
      });
      const finish = () => {
        const code = res.statusCode ?? null;
        const kept = Buffer.concat(chunks).subarray(0, BODY_KEPT).toString('utf8');
        const answered: Record<string, string> = {};
        for (const name of ['content-type', 'retry-after']) if (typeof res.headers[name] === 'string') answered[name] = res.headers[name] as string;
        resolve({ url: req.url, code, body: kept, headers: answered, sentAt, successful: code !== null && code >= 200 && code < 300, attempt: req.attempt });
      };
      res.on('end', finish);
      res.on('close', finish);
      res.on('error', finish);
    });
    request.on('socket', (socket) => {
      socket.once('connect', () => {
        const remote = socket.remoteAddress;
        if (!listed && remote && refusedAddress(remote)) request.destroy(Object.assign(new Error(`connected to ${remote}, a refused address`), { code: 'EREFUSEDADDRESS' }));
      });
    });
    request.on('error', (e: NodeJS.ErrnoException) => {
      resolve(failed(e.name === 'AbortError' || e.name === 'TimeoutError' ? `no answer within ${req.timeoutMs} ms` : `${e.code ?? 'error'}: ${e.message}`));
    });
    request.end(req.body);
  });
}
