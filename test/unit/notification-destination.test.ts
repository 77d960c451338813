// Where a notification may go: every refused form of URL, and hosts that are or resolve to refused addresses.
import { expect } from 'chai';
import { checkDestination, DestinationRefusedError, parseDestination, refusedAddress, type DestinationPolicy } from '../../src/notifications/destination.js';

const names: Record<string, string[]> = {
  'hooks.example.com': ['93.184.216.34'],
  'rebind.example.com': ['93.184.216.34', '10.0.0.7'],
  'metadata.example.com': ['169.254.169.254'],
  'mapped.example.com': ['::ffff:192.168.1.1'],
  'six.example.com': ['2606:2800:220:1:248:1893:25c8:1946'],
};
const policy: DestinationPolicy = {
  allowHosts: ['127.0.0.1', 'receiver.test:8443'],
  lookup: async (host) => {
    const found = names[host];
    if (!found) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
    return found;
  },
};
const refusal = async (text: string): Promise<string | null> => {
  try {
    await checkDestination(parseDestination(text, policy), policy);
    return null;
  } catch (e) {
    if (!(e instanceof DestinationRefusedError)) throw e;
    return e.message;
  }
};

describe('notification destinations', () => {
  it('refuses every address that is not globally reachable (IANA special-purpose registries) and multicast, in IPv4, IPv6 and IPv4-mapped forms', () => {
    for (const a of ['192.0.2.10', '198.51.100.7', '203.0.113.200', '198.18.0.1', '198.19.255.254', '240.0.0.1', '250.1.2.3', '192.0.0.8', '192.88.99.1',
      '::ffff:192.0.2.10', '2001:db8::1', '2001:db8:ffff::1', '3fff::1', '3fff:fff:ffff::1', '2001:2::1', '2001:10::1', '100::1', '64:ff9b:1::1', '5f00::1',
      '127.0.0.1', '127.8.9.10', '10.1.2.3', '172.16.0.1', '172.31.255.255', '192.168.0.1', '100.64.0.1', '169.254.169.254',
      '224.0.0.1', '0.0.0.0', '255.255.255.255', '::1', '::', 'fe80::1', 'fc00::1', 'fd12:3456::1', 'ff02::1', '::ffff:127.0.0.1', '::ffff:10.0.0.1', '64:ff9b::a00:1']) {
      expect(refusedAddress(a), a).to.equal(true);
    }
    for (const a of ['93.184.216.34', '8.8.8.8', '172.32.0.1', '100.128.0.1', '192.0.3.1', '198.20.0.1', '203.0.114.1', '223.255.255.255',
      '2606:2800:220:1:248:1893:25c8:1946', '::ffff:8.8.8.8', '2001:db9::1', '2001:200::1', '4000::1']) {
      expect(refusedAddress(a), a).to.equal(false);
    }
  });

  it('accepts an https URL whose host resolves only to public addresses', async () => {
    expect(await refusal('https://hooks.example.com/explorer?x=1')).to.equal(null);
    expect(await refusal('https://six.example.com/')).to.equal(null);
    expect(await refusal('https://93.184.216.34:8443/hook')).to.equal(null);
  });

  it('refuses every other form: loopback aliases, private literals, IPv6, numeric hosts, credentials, other schemes', async () => {
    const cases: [string, RegExp][] = [
      ['https://localhost/hook', /does not resolve|loopback/],
      ['https://127.0.0.2/', /loopback/],
      ['https://[::1]/', /loopback/],
      ['https://[::ffff:127.0.0.1]/', /loopback/],
      ['https://[fe80::1]/', /loopback/],
      ['https://10.0.0.1/', /private/],
      ['https://169.254.169.254/latest/meta-data', /link-local/],
      ['https://0.0.0.0/', /unspecified/],
      ['https://2130706433/', /another form than a dotted quad/],
      ['https://0x7f.1/', /another form than a dotted quad/],
      ['https://0177.0.0.1/', /another form than a dotted quad/],
      ['https://127.1/', /another form than a dotted quad/],
      ['https://user:secret@hooks.example.com/', /user name or password/],
      ['https://token@hooks.example.com/', /user name or password/],
      ['ftp://hooks.example.com/', /must be https/],
      ['file:///etc/passwd', /must be https/],
      ['javascript:alert(1)', /must be https/],
      ['http://hooks.example.com/', /plain http only/],
      ['hooks.example.com/path', /not an absolute URL/],
      ['https://rebind.example.com/', /resolves to 10\.0\.0\.7/],
      ['https://metadata.example.com/', /resolves to 169\.254\.169\.254/],
      ['https://mapped.example.com/', /resolves to ::ffff:192\.168\.1\.1/],
      ['https://nowhere.example.com/', /does not resolve \(ENOTFOUND\)/],
    ];
    for (const [url, why] of cases) expect(await refusal(url), url).to.match(why);
  });

  it('lets NOTIFY_ALLOW_HOSTS through, by name or by name and port, but never a numeric host in another form', async () => {
    expect(await refusal('http://127.0.0.1:9999/hook')).to.equal(null);
    expect(await refusal('https://receiver.test:8443/')).to.equal(null);
    expect(await refusal('https://receiver.test:9443/')).to.match(/does not resolve/);
    expect(await refusal('http://2130706433:9999/')).to.match(/another form than a dotted quad/);
    expect(await refusal('http://127.1:9999/')).to.match(/another form than a dotted quad/);
  });
});
