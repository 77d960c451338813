// Where a sync reads from and with which token (src/sync/upstream-endpoint.ts): the address rules and the
// engine CLI's credential conventions, in their order.
import { expect } from 'chai';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findToken, parseUpstream, SyncUsageError, tokenVariable } from '../../src/sync/upstream-endpoint.js';
import { syncCredentials } from '../../src/config.js';

describe('sync endpoint and credentials', () => {
  it('allows plain http to loopback only, in any form the URL parser reads as loopback', () => {
    for (const ok of ['http://127.0.0.1:8080', 'http://localhost', 'http://[::1]:9000/', 'http://2130706433', 'http://0x7f.1', 'https://app.terraform.io']) {
      expect(() => parseUpstream(ok), ok).not.to.throw();
    }
    for (const refused of ['http://10.0.0.1', 'http://example.com', 'http://[::2]']) {
      expect(() => parseUpstream(refused), refused).to.throw(SyncUsageError, /plain http/);
    }
    expect(() => parseUpstream('http://example.com', true)).not.to.throw();
    expect(() => parseUpstream('https://u:p@example.com')).to.throw(SyncUsageError, /credentials/);
    expect(() => parseUpstream('https://example.com/?x=1')).to.throw(SyncUsageError, /query/);
    expect(() => parseUpstream('file:///etc/passwd')).to.throw(SyncUsageError, /https/);
    expect(parseUpstream('https://tfe.example.com:8443/base/')).to.deep.equal({ base: 'https://tfe.example.com:8443/base', host: 'tfe.example.com:8443' });
  });

  it('names TF_TOKEN_<host> as the engine CLI does', () => {
    expect(tokenVariable('app.terraform.io')).to.equal('TF_TOKEN_app_terraform_io');
    expect(tokenVariable('my-tfe.example.com')).to.equal('TF_TOKEN_my__tfe_example_com');
    expect(tokenVariable('127.0.0.1:8080')).to.equal('TF_TOKEN_127_0_0_1___8080');
  });

  it('takes the first found: EXPLORER_SYNC_TOKEN, then TF_TOKEN_<host>, then credentials.tfrc.json', () => {
    const dir = mkdtempSync(join(tmpdir(), 'explorer-creds-'));
    try {
      writeFileSync(join(dir, 'credentials.tfrc.json'), JSON.stringify({ credentials: { 'app.terraform.io': { token: 'from-file' } } }));
      const base = { TF_CLI_CONFIG_DIR: dir };
      expect(findToken('app.terraform.io', syncCredentials({ ...base, EXPLORER_SYNC_TOKEN: 'explicit', TF_TOKEN_app_terraform_io: 'from-env' })))
        .to.deep.equal({ token: 'explicit', source: 'EXPLORER_SYNC_TOKEN' });
      expect(findToken('app.terraform.io', syncCredentials({ ...base, TF_TOKEN_app_terraform_io: 'from-env' })))
        .to.deep.equal({ token: 'from-env', source: 'TF_TOKEN_app_terraform_io' });
      expect(findToken('app.terraform.io', syncCredentials(base))).to.deep.equal({ token: 'from-file', source: 'credentials.tfrc.json' });
      // Another host's variable or entry is not this host's.
      expect(findToken('other.example.com', syncCredentials({ ...base, TF_TOKEN_app_terraform_io: 'from-env' }))).to.equal(null);
      // ~/.terraform.d when TF_CLI_CONFIG_DIR is not set.
      expect(findToken('app.terraform.io', syncCredentials({ HOME: join(dir, 'nowhere') }))).to.equal(null);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
