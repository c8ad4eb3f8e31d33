/**
 * Reads deploy/kubernetes/ and the Dockerfile as Kubernetes and Docker would, for the tests beside
 * this file: the kustomization's resources, a container's env with `valueFrom` and `$(VAR)`
 * expanded, named ports resolved, and the image's entry point.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { projectRoot } from '../../src/kafka/paths.ts';

export const root = projectRoot();
export const deployDir = join(root, 'deploy', 'kubernetes');

export interface EnvVar {
  readonly name: string;
  readonly value?: string;
  readonly valueFrom?: { readonly fieldRef?: { readonly fieldPath: string }; readonly secretKeyRef?: { readonly name: string; readonly key: string; readonly optional?: boolean } };
}
export interface HttpProbe {
  readonly httpGet: { readonly path: string; readonly port: string | number };
}
export interface Container {
  readonly name: string;
  readonly image: string;
  readonly args: readonly string[];
  readonly env: readonly EnvVar[];
  readonly ports: readonly { readonly name?: string; readonly containerPort: number }[];
  readonly livenessProbe: HttpProbe;
  readonly readinessProbe: HttpProbe;
  readonly startupProbe?: HttpProbe;
  readonly resources: { readonly requests: Record<string, string>; readonly limits: Record<string, string> };
  readonly volumeMounts: readonly { readonly name: string; readonly mountPath: string }[];
}
interface Labels {
  readonly labels?: Record<string, string>;
  readonly annotations?: Record<string, string>;
}
export interface StatefulSet {
  readonly kind: 'StatefulSet';
  readonly metadata: { readonly name: string };
  readonly spec: {
    readonly serviceName: string;
    readonly replicas: number;
    readonly selector: { readonly matchLabels: Record<string, string> };
    readonly template: {
      readonly metadata: Labels;
      readonly spec: {
        readonly terminationGracePeriodSeconds: number;
        readonly containers: readonly Container[];
        readonly volumes: readonly { readonly name: string; readonly configMap?: { readonly name: string } }[];
      };
    };
    readonly volumeClaimTemplates: readonly { readonly metadata: { readonly name: string } }[];
  };
}
export interface Resource {
  readonly kind: string;
  readonly metadata: { readonly name: string };
  readonly spec?: Record<string, unknown>;
  readonly data?: Record<string, string>;
}

/** Every resource the kustomization lists, each file parsed as YAML (all its documents). */
export function loadManifests(): { files: readonly string[]; resources: readonly Resource[] } {
  const kustomization = parseYaml(readFileSync(join(deployDir, 'kustomization.yaml'), 'utf8'))[0] as { resources: string[] };
  const resources = kustomization.resources.flatMap((file) => parseYaml(readFileSync(join(deployDir, file), 'utf8')) as Resource[]);
  return { files: kustomization.resources, resources };
}

function parseYaml(text: string): unknown[] {
  return parseAllDocuments(text).map((doc) => {
    assert.deepEqual(doc.errors, [], 'valid YAML');
    return doc.toJS() as unknown;
  });
}

export function resourceOf<T = Resource>(resources: readonly Resource[], kind: string): T {
  const found = resources.filter((r) => r.kind === kind);
  assert.equal(found.length, 1, `one ${kind}`);
  return found[0] as T;
}

export function workerContainer(set: StatefulSet): Container {
  const container = set.spec.template.spec.containers[0];
  assert.ok(container && set.spec.template.spec.containers.length === 1, 'one container');
  return container;
}

/** What the kubelet gives a pod: its name and namespace for `fieldRef`, and the Secrets' values. */
export interface PodContext {
  readonly podName: string;
  readonly namespace: string;
  readonly secrets: Readonly<Record<string, Readonly<Record<string, string>>>>;
}

/**
 * The container's environment as the kubelet builds it: `fieldRef` and `secretKeyRef` resolved, and
 * `$(NAME)` in a value replaced by a variable defined before it (`$$` is a literal `$`).
 */
export function containerEnv(container: Container, pod: PodContext): Record<string, string> {
  const env: Record<string, string> = {};
  for (const v of container.env) {
    if (v.value !== undefined) {
      env[v.name] = v.value.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (whole, name: string | undefined) => (name === undefined ? '$' : (env[name] ?? whole)));
    } else if (v.valueFrom?.fieldRef) {
      const fields: Record<string, string> = { 'metadata.name': pod.podName, 'metadata.namespace': pod.namespace };
      const value = fields[v.valueFrom.fieldRef.fieldPath];
      assert.ok(value !== undefined, `fieldRef ${v.valueFrom.fieldRef.fieldPath}`);
      env[v.name] = value;
    } else if (v.valueFrom?.secretKeyRef) {
      const { name, key } = v.valueFrom.secretKeyRef;
      const value = pod.secrets[name]?.[key];
      assert.ok(value !== undefined, `Secret ${name} key ${key}`);
      env[v.name] = value;
    } else {
      assert.fail(`env ${v.name} has neither a value nor a valueFrom this test knows`);
    }
  }
  return env;
}

/** A probe's port as a number: a named port is looked up among the container's ports. */
export function probePort(container: Container, probe: HttpProbe): number {
  const port = probe.httpGet.port;
  if (typeof port === 'number') return port;
  const named = container.ports.find((p) => p.name === port);
  assert.ok(named, `named port ${port}`);
  return named.containerPort;
}

export interface DockerImage {
  readonly workdir: string;
  readonly env: Readonly<Record<string, string>>;
  readonly entrypoint: readonly string[];
  readonly cmd: readonly string[];
}

/** WORKDIR, ENV, ENTRYPOINT and CMD of the Dockerfile (exec form only: a shell form would need a shell to interpret). */
export function readDockerfile(): DockerImage {
  const text = readFileSync(join(root, 'Dockerfile'), 'utf8').replace(/\\\n/g, ' ');
  let workdir = '/';
  const env: Record<string, string> = {};
  let entrypoint: string[] = [];
  let cmd: string[] = [];
  for (const line of text.split('\n')) {
    const m = /^\s*([A-Z]+)\s+(.*)$/.exec(line);
    if (!m) continue;
    const [, instruction, rest] = m as unknown as [string, string, string];
    if (instruction === 'WORKDIR') workdir = rest.trim();
    if (instruction === 'ENV') {
      for (const pair of rest.trim().split(/\s+/)) {
        const at = pair.indexOf('=');
        assert.ok(at > 0, `ENV ${pair}: key=value form`);
        env[pair.slice(0, at)] = pair.slice(at + 1);
      }
    }
    if (instruction === 'ENTRYPOINT' || instruction === 'CMD') {
      const form = JSON.parse(rest) as unknown;
      assert.ok(Array.isArray(form) && form.every((a) => typeof a === 'string'), `${instruction} in exec form`);
      if (instruction === 'ENTRYPOINT') entrypoint = form as string[];
      else cmd = form as string[];
    }
  }
  return { workdir, env, entrypoint, cmd };
}

/** Bytes of a Kubernetes quantity such as `2Gi` or `512M`. */
export function quantityBytes(quantity: string): number {
  const m = /^(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)?$/.exec(quantity);
  assert.ok(m, `quantity ${quantity}`);
  const units: Record<string, number> = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, k: 1e3, M: 1e6, G: 1e9, T: 1e12 };
  return Number(m[1]) * (m[2] === undefined ? 1 : units[m[2]]!);
}
