/**
 * Certificates made by the test with the openssl command: a private CA, server certificates for
 * 127.0.0.1 and client certificates it signs, expired and soon-expiring ones. P-256 keys (fast
 * to make), in a temporary directory removed by `cleanup()`.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface Issued {
  cert: string;
  key: string;
}

export interface Authority extends Issued {
  issue(commonName: string, options?: { days?: number; server?: boolean; dnsName?: string }): Issued;
}

export interface CertificateFactory {
  ca(name: string): Authority;
  /** A PEM private key encrypted with a passphrase (refused by the API). */
  encryptedKey(): string;
  cleanup(): void;
}

export function certificateFactory(): CertificateFactory {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'hookpost-tls-'));
  let n = 0;
  const file = (name: string) => path.join(dir, `${n}-${name}`);
  const openssl = (args: string[]) => execFileSync('openssl', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const ecKey = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
  return {
    ca(name) {
      n++;
      const [key, cert] = [file('ca.key'), file('ca.pem')];
      openssl([
        'req',
        '-x509',
        ...ecKey,
        '-keyout',
        key,
        '-out',
        cert,
        '-subj',
        `/CN=${name}`,
        '-days',
        '30',
        '-addext',
        'basicConstraints=critical,CA:TRUE',
        '-addext',
        'keyUsage=critical,keyCertSign,cRLSign',
      ]);
      const authority: Authority = {
        cert: readFileSync(cert, 'utf8'),
        key: readFileSync(key, 'utf8'),
        issue(commonName, options = {}) {
          n++;
          const [leafKey, csr, leaf, ext] = [
            file('leaf.key'),
            file('leaf.csr'),
            file('leaf.pem'),
            file('ext'),
          ];
          openssl(['req', ...ecKey, '-keyout', leafKey, '-out', csr, '-subj', `/CN=${commonName}`]);
          writeFileSync(
            ext,
            options.server
              ? `subjectAltName=IP:127.0.0.1,DNS:${options.dnsName ?? 'localhost'}\nextendedKeyUsage=serverAuth\n`
              : 'extendedKeyUsage=clientAuth\n',
          );
          // A negative number of days makes a certificate that ended before it began: expired.
          openssl([
            'x509',
            '-req',
            '-in',
            csr,
            '-CA',
            cert,
            '-CAkey',
            key,
            '-CAcreateserial',
            '-out',
            leaf,
            '-days',
            String(options.days ?? 30),
            '-extfile',
            ext,
          ]);
          return { cert: readFileSync(leaf, 'utf8'), key: readFileSync(leafKey, 'utf8') };
        },
      };
      return authority;
    },
    encryptedKey() {
      n++;
      const out = file('enc.key');
      openssl([
        'genpkey',
        '-algorithm',
        'EC',
        '-pkeyopt',
        'ec_paramgen_curve:P-256',
        '-aes-128-cbc',
        '-pass',
        'pass:x',
        '-out',
        out,
      ]);
      return readFileSync(out, 'utf8');
    },
    cleanup() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
