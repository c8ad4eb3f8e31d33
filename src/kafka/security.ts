import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { OnceflowError } from '../errors.ts';
import type { AclEntry } from './acls.ts';
import type { ClientOptions } from './admin.ts';
import { kafkaClasspath } from './jars.ts';

export class SecuritySetupError extends OnceflowError {
  constructor(
    readonly code: 'CERTIFICATES_FAILED' | 'SECURITY_APPLY_FAILED',
    message: string,
  ) {
    super(message);
  }
}

export const SCRAM_MECHANISM = 'SCRAM-SHA-512';

/** Where a secure dev cluster keeps what clients need; the password itself stays in a 0600 file. */
export interface SecureClusterInfo {
  readonly caLocation: string;
  readonly adminUser: string;
  readonly adminPasswordFile: string;
  /** Java client properties of the admin user (`--command-config` of Kafka's tools). */
  readonly adminCommandConfig: string;
}

/** What the broker needs beyond the plain settings: its keystore and the admin's credentials. */
export interface BrokerSecurity {
  readonly keystore: string;
  readonly keystorePassword: string;
  readonly caLocation: string;
  readonly adminUser: string;
  readonly adminPassword: string;
}

export const newPassword = (): string => randomBytes(18).toString('base64url');

function writeSecret(file: string, text: string): void {
  writeFileSync(file, text, { mode: 0o600 });
  chmodSync(file, 0o600);
}

function openssl(args: string[], cwd: string): void {
  const r = spawnSync('openssl', args, { cwd, encoding: 'utf8' });
  if (r.error || r.status !== 0) {
    // openssl is only ever given pass: arguments for the keystore; its output does not echo them.
    throw new SecuritySetupError('CERTIFICATES_FAILED', `openssl ${args[0]} failed: ${r.error?.message ?? r.stderr}`);
  }
}

/**
 * A throw-away CA and a broker certificate for 127.0.0.1/localhost, made at every start: librdkafka
 * verifies the broker's name, so the SAN must carry the address clients dial.
 */
export function makeBrokerSecurity(dir: string, adminUser = 'admin'): { broker: BrokerSecurity; info: SecureClusterInfo } {
  const tls = join(dir, 'tls');
  mkdirSync(tls, { recursive: true });
  const keystorePassword = newPassword();
  openssl(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '30', '-subj', '/CN=onceflow dev CA'], tls);
  openssl(['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'broker.key', '-out', 'broker.csr', '-subj', '/CN=localhost'], tls);
  writeFileSync(join(tls, 'san.cnf'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\n');
  openssl(['x509', '-req', '-in', 'broker.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'broker.crt', '-days', '30', '-extfile', 'san.cnf'], tls);
  openssl(['pkcs12', '-export', '-in', 'broker.crt', '-inkey', 'broker.key', '-certfile', 'ca.crt', '-name', 'broker', '-out', 'broker.p12', '-passout', `pass:${keystorePassword}`], tls);
  const adminPassword = newPassword();
  const adminPasswordFile = join(dir, 'admin.password');
  writeSecret(adminPasswordFile, adminPassword);
  const caLocation = join(tls, 'ca.crt');
  const adminCommandConfig = join(dir, 'admin.properties');
  writeSecret(adminCommandConfig, javaClientProperties(caLocation, adminUser, adminPassword));
  return {
    broker: { keystore: join(tls, 'broker.p12'), keystorePassword, caLocation, adminUser, adminPassword },
    info: { caLocation, adminUser, adminPasswordFile, adminCommandConfig },
  };
}

const jaas = (user: string, password: string): string => `org.apache.kafka.common.security.scram.ScramLoginModule required username="${user}" password="${password}";`;

function javaClientProperties(caLocation: string, user: string, password: string): string {
  return [
    'security.protocol=SASL_SSL',
    `sasl.mechanism=${SCRAM_MECHANISM}`,
    `sasl.jaas.config=${jaas(user, password)}`,
    'ssl.truststore.type=PEM',
    `ssl.truststore.location=${caLocation}`,
    '',
  ].join('\n');
}

/**
 * Broker settings of the SASL_SSL listener. The controller listener stays PLAINTEXT on 127.0.0.1:
 * its only client is this same process, which reaches it as User:ANONYMOUS, hence that super user.
 */
export function secureListenerProperties(s: BrokerSecurity): string[] {
  return [
    'sasl.enabled.mechanisms=' + SCRAM_MECHANISM,
    'sasl.mechanism.inter.broker.protocol=' + SCRAM_MECHANISM,
    `listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=${jaas(s.adminUser, s.adminPassword)}`,
    'ssl.keystore.type=PKCS12',
    `ssl.keystore.location=${s.keystore}`,
    `ssl.keystore.password=${s.keystorePassword}`,
    `ssl.key.password=${s.keystorePassword}`,
    'ssl.truststore.type=PEM',
    `ssl.truststore.location=${s.caLocation}`,
    'authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer',
    `super.users=User:${s.adminUser};User:ANONYMOUS`,
    'allow.everyone.if.no.acl.found=false',
  ];
}

/** Storage-format arguments: in KRaft the first SCRAM credential must exist before the broker starts. */
export const formatScramArgs = (s: BrokerSecurity): string[] => ['--add-scram', `${SCRAM_MECHANISM}=[name=${s.adminUser},password=${s.adminPassword}]`];

/** librdkafka options of a user over SCRAM and TLS: the worker's `kafka` config, or any client's extra options. */
export function scramClientOptions(caLocation: string, user: string, password: string): ClientOptions {
  return {
    'security.protocol': 'SASL_SSL',
    'sasl.mechanisms': SCRAM_MECHANISM,
    'sasl.username': user,
    'sasl.password': password,
    'ssl.ca.location': caLocation,
  };
}

/** A secure dev cluster's admin password file is gone or unreadable: only a new `dev up --secure` writes it. */
export class DevCredentialsMissingError extends OnceflowError {
  readonly code = 'DEV_CREDENTIALS_MISSING';
  constructor(
    readonly file: string,
    reason: string,
  ) {
    super(`cannot read the secure dev cluster's admin password file ${file} (${reason}): run \`onceflow dev up --secure\` again to write new credentials`);
  }
}

function readAdminPassword(file: string): string {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch (e) {
    throw new DevCredentialsMissingError(file, (e as NodeJS.ErrnoException).code ?? (e as Error).message);
  }
}

export function adminClientOptions(info: SecureClusterInfo): ClientOptions {
  return scramClientOptions(info.caLocation, info.adminUser, readAdminPassword(info.adminPasswordFile));
}

const securityAdminSource = (): string => fileURLToPath(new URL('./SecurityAdmin.java', import.meta.url));

/**
 * Creates (or updates) SCRAM users and adds ACLs as the admin, through Kafka's Java Admin API in one
 * JVM: librdkafka's admin can do neither, and one JVM start costs seconds.
 */
export async function applySecurity(bootstrap: string, info: SecureClusterInfo, change: { users?: readonly { name: string; password: string }[]; acls?: readonly AclEntry[] }): Promise<string> {
  const users = change.users ?? [];
  for (const u of users) {
    if (!/^[A-Za-z0-9._-]+$/.test(u.name) || /\s/.test(u.password) || u.password === '') {
      throw new SecuritySetupError('SECURITY_APPLY_FAILED', `user "${u.name}": names must match [A-Za-z0-9._-]+ and passwords be non-empty without whitespace`);
    }
  }
  const input = [
    ...users.map((u) => `user ${u.name} ${u.password}`),
    ...(change.acls ?? []).map((a) => `acl ${a.principal} ${a.operation} ${a.resourceType} ${a.patternType} ${a.name}`),
  ].join('\n');
  const child = spawn('java', ['-Xshare:auto', '-XX:TieredStopAtLevel=1', '-Dlog4j2.level=error', '-cp', kafkaClasspath(), securityAdminSource(), info.adminCommandConfig, bootstrap], { stdio: ['pipe', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr.on('data', (d: Buffer) => (output += d.toString()));
  child.stdin.end(`${input}\n`);
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', resolve);
  });
  if (code !== 0) {
    const scrubbed = users.reduce((text, u) => text.split(u.password).join('***'), output);
    throw new SecuritySetupError('SECURITY_APPLY_FAILED', `creating users/ACLs failed (exit ${code}):\n${scrubbed.split('\n').slice(-20).join('\n')}`);
  }
  return output.trim().split('\n').at(-1) ?? '';
}
