// A delivery judged where its socket would connect: a name that resolves (now) to a refused address is not
// connected to, whatever it resolved to when the configuration was made; nothing here leaves the machine.
import { expect } from 'chai';
import { createServer } from 'node:http';
import type { AddressInfo, LookupFunction } from 'node:net';
import { deliver, signature } from '../../src/notifications/deliver.js';

const resolvingTo = (address: string, family = 4): LookupFunction => (_host, options, callback) => {
  if ((options as { all?: boolean }).all) (callback as (e: null, a: { address: string; family: number }[]) => void)(null, [{ address, family }]);
  else (callback as (e: null, a: string, f: number) => void)(null, address, family);
};
const request = (url: string, lookup?: LookupFunction) => deliver({
  url, body: '{}', deliveryId: 'nd-0000000000000001', token: null, attempt: 3, userAgent: 'test', timeoutMs: 2000,
  policy: { allowHosts: [] }, ...(lookup ? { lookup } : {}),
});

describe('notification delivery', () => {
  it('does not connect to a name that resolves to a loopback, private or link-local address', async () => {
    for (const [address, family] of [['127.0.0.1', 4], ['10.9.8.7', 4], ['169.254.169.254', 4], ['::1', 6], ['::ffff:192.168.0.1', 6]] as const) {
      const r = await request('https://hooks.example.test/x', resolvingTo(address, family));
      expect(r, address).to.include({ code: null, successful: false, attempt: 3 });
      expect(r.body, address).to.include('refused address');
    }
  });

  it('does not connect to a refused address literal', async () => {
    const r = await request('https://192.168.1.1/x');
    expect(r).to.include({ code: null, successful: false });
    expect(r.body).to.equal('192.168.1.1 is a refused address');
  });

  it('gives up on a receiver that does not answer within the time-out, and reads no more than 1,024 bytes of one that streams', async () => {
    const receiver = createServer((req, res) => {
      if (req.url === '/silent') return; // headers never come
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      const more = () => { if (res.write('x'.repeat(4096))) setImmediate(more); else res.once('drain', more); };
      more();
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    const base = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
    try {
      const send = (path: string) => deliver({ url: `${base}${path}`, body: '{}', deliveryId: 'nd-0000000000000002', token: null, attempt: 1, userAgent: 'test', timeoutMs: 300, policy: { allowHosts: ['127.0.0.1'] } });
      const silent = await send('/silent');
      expect(silent).to.include({ code: null, successful: false, body: 'no answer within 300 ms' });
      const streaming = await send('/stream');
      expect(streaming).to.include({ code: 200, successful: true });
      expect(streaming.body).to.have.length(1024);
    } finally {
      receiver.closeAllConnections();
      receiver.close();
    }
  });

  it('signs with HMAC-SHA512 of the body, in hex', () => {
    expect(signature('k', '{"a":1}')).to.match(/^[0-9a-f]{128}$/);
    expect(signature('k', '{"a":1}')).to.not.equal(signature('k', '{"a":2}'));
  });
});
