import { execFileSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { isIP } from 'node:net';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { describe, expect, it } from 'vitest';
import { Deployment } from 'kubernetes-models/apps/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { Job } from 'kubernetes-models/batch/v1';
import { Ingress, NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { ConfigMap, Namespace, Service, ServiceAccount } from 'kubernetes-models/v1';
import { databaseUrlOf, loadConfig, loadSubgraphConfig, SERVICE_NAMES, type ServiceName } from '@ots/shared/config';

/**
 * The Kubernetes manifests as CI checks them without a cluster (contract section 11): the workloads'
 * and the migrations' kustomizations, base and production, rendered by `kubectl kustomize`, every
 * object validated against the Kubernetes schemas, then our own rules.
 */
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- rendered YAML, read field by field by the checks
type Manifest = Record<string, any>;

function render(overlay: string): Manifest[] {
  let yaml: string;
  try {
    yaml = execFileSync('kubectl', ['kustomize', `deploy/kubernetes/${overlay}`], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (error) {
    const { code, stderr } = error as NodeJS.ErrnoException & { stderr?: string };
    throw new Error(code === 'ENOENT' ? 'kubectl (1.27 or later, for its kustomize) is needed to render the manifests' : `kubectl kustomize failed: ${stderr}`);
  }
  return parseAllDocuments(yaml).map((document) => document.toJS() as Manifest);
}

/** A kubernetes-models class: its `validate` runs the schema's validator on `this`. */
type KubernetesModel = new (data: Manifest) => { validate(): void };

const MODELS: Record<string, KubernetesModel> = {
  'apps/v1/Deployment': Deployment,
  'autoscaling/v2/HorizontalPodAutoscaler': HorizontalPodAutoscaler,
  'batch/v1/Job': Job,
  'networking.k8s.io/v1/Ingress': Ingress,
  'networking.k8s.io/v1/NetworkPolicy': NetworkPolicy,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'v1/ConfigMap': ConfigMap,
  'v1/Namespace': Namespace,
  'v1/Service': Service,
  'v1/ServiceAccount': ServiceAccount,
};

/**
 * Wraps `value` so that every property the schema validator reads is recorded. The validators check
 * the fields the schema knows and ignore the rest, as the API server's non-strict decoding does; a
 * misspelt field (`periodSecond`) would pass them and be dropped by the cluster. A key of an object
 * the validator never read, where it did not list the object's keys (as it does for maps such as
 * labels), is a field the schema does not have.
 */
function watched(value: unknown, path: string, reads: Map<object, { path: string; keys: Set<string>; listed: boolean }>): unknown {
  if (value === null || typeof value !== 'object') return value;
  const record = reads.get(value) ?? { path, keys: new Set<string>(), listed: false };
  reads.set(value, record);
  return new Proxy(value, {
    get(target, key, receiver) {
      const child = Reflect.get(target, key, receiver) as unknown;
      if (typeof key !== 'string' || !Object.hasOwn(target, key)) return child;
      record.keys.add(key);
      return watched(child, Array.isArray(target) ? `${path}[${key}]` : `${path}.${key}`, reads);
    },
    has(target, key) {
      if (typeof key === 'string') record.keys.add(key);
      return Reflect.has(target, key);
    },
    ownKeys(target) {
      record.listed = true;
      return Reflect.ownKeys(target);
    },
  });
}

/** What the Kubernetes schema refuses in `manifest`: wrong types, missing required fields, unknown fields. */
function schemaProblems(manifest: Manifest): string[] {
  const name = `${manifest.kind}/${manifest.metadata?.name}`;
  const model = MODELS[`${manifest.apiVersion}/${manifest.kind}`];
  if (!model) return [`${name}: ${manifest.apiVersion} ${manifest.kind} is not a kind these manifests are checked for`];
  const instance = new model(manifest);
  const reads = new Map<object, { path: string; keys: Set<string>; listed: boolean }>();
  try {
    instance.validate.call(watched(instance, '', reads));
  } catch (error) {
    return [`${name}: ${(error as Error).message}`];
  }
  return [...reads]
    .filter(([object, record]) => !Array.isArray(object) && !record.listed)
    .flatMap(([object, record]) => Object.keys(object).filter((key) => !record.keys.has(key)).map((key) => `${name}: unknown field ${record.path}.${key}`));
}

const SECRET_VARIABLES = /(_DATABASE_URL|^DATABASE_URL|^REDIS_URL|^API_KEY_HMAC_SECRET|^ASSERTION_PRIVATE_KEY|^EVENTS_INGEST_SECRET|^WEBHOOK_SECRET_KEY)$/;
const matches = (selector: Record<string, string> | undefined, labels: Record<string, string>) =>
  selector !== undefined && Object.entries(selector).every(([key, value]) => labels[key] === value);

/** Our own rules for what runs: each finding names the object and the rule. */
function policyProblems(manifests: Manifest[]): string[] {
  const problems: string[] = [];
  const of = (kind: string) => manifests.filter((manifest) => manifest.kind === kind);
  if (manifests.some((manifest) => manifest.kind === 'Secret')) problems.push('a Secret is inlined: Secrets are referenced, never part of the manifests');

  const workloads = [...of('Deployment'), ...of('Job')];
  for (const workload of workloads) {
    const name = `${workload.kind}/${workload.metadata.name}`;
    const pod = workload.spec.template.spec;
    if (pod.securityContext?.runAsNonRoot !== true) problems.push(`${name}: the pod does not set runAsNonRoot`);
    for (const container of pod.containers) {
      const where = `${name} container ${container.name}`;
      const tag = /^[^@]+:([^:/@]+)$/.exec(container.image)?.[1];
      if (!container.image.includes('@sha256:') && (tag === undefined || tag === 'latest')) problems.push(`${where}: image ${container.image} is not pinned to a version`);
      if (container.securityContext?.readOnlyRootFilesystem !== true) problems.push(`${where}: the root file system is writable`);
      if (container.securityContext?.allowPrivilegeEscalation !== false) problems.push(`${where}: privilege escalation is allowed`);
      if (!container.securityContext?.capabilities?.drop?.includes('ALL')) problems.push(`${where}: capabilities are not dropped`);
      for (const resource of ['cpu', 'memory']) {
        if (!container.resources?.requests?.[resource]) problems.push(`${where}: no ${resource} request`);
        if (!container.resources?.limits?.[resource]) problems.push(`${where}: no ${resource} limit`);
      }
      for (const variable of container.env ?? []) {
        if (SECRET_VARIABLES.test(variable.name) && !variable.valueFrom?.secretKeyRef) problems.push(`${where}: ${variable.name} is not read from a Secret`);
      }
    }
  }

  for (const deployment of of('Deployment')) {
    const name = `Deployment/${deployment.metadata.name}`;
    const labels = deployment.spec.template.metadata.labels as Record<string, string>;
    for (const container of deployment.spec.template.spec.containers) {
      const probe = (kind: string, path: string) => {
        if (container[kind]?.httpGet?.path !== path) problems.push(`${name}: no ${kind} on ${path}`);
      };
      probe('startupProbe', '/healthz');
      probe('readinessProbe', '/readyz');
      probe('livenessProbe', '/healthz');
    }
    const rolling = deployment.spec.strategy?.rollingUpdate;
    if (deployment.spec.strategy?.type !== 'RollingUpdate' || rolling?.maxUnavailable !== 0) problems.push(`${name}: a rollout may take a ready replica away before its replacement is ready`);
    const hpa = of('HorizontalPodAutoscaler').find((candidate) => candidate.spec.scaleTargetRef.kind === 'Deployment' && candidate.spec.scaleTargetRef.name === deployment.metadata.name);
    if (!hpa) problems.push(`${name}: no HorizontalPodAutoscaler`);
    else if (!(hpa.spec.minReplicas >= 2)) problems.push(`${name}: the HorizontalPodAutoscaler allows fewer than 2 replicas`);
    const budget = of('PodDisruptionBudget').find((candidate) => matches(candidate.spec.selector?.matchLabels, labels));
    if (!budget) problems.push(`${name}: no PodDisruptionBudget`);
    else if (hpa && !(budget.spec.maxUnavailable < hpa.spec.minReplicas || budget.spec.minAvailable >= 1)) problems.push(`${name}: its PodDisruptionBudget lets every replica go at once`);
    if (!of('Service').some((service) => matches(service.spec.selector, labels))) problems.push(`${name}: no Service`);
  }

  const policies = of('NetworkPolicy');
  const denyAll = policies.find((policy) => policy.spec.policyTypes?.includes('Ingress') && !policy.spec.ingress?.length);
  if (!denyAll) problems.push('no NetworkPolicy denies ingress by default');
  for (const deployment of of('Deployment')) {
    const labels = deployment.spec.template.metadata.labels as Record<string, string>;
    if (denyAll && !matches(denyAll.spec.podSelector.matchLabels, labels)) problems.push(`Deployment/${deployment.metadata.name}: not covered by the default deny`);
    const fromAnywhere = policies.some(
      (policy) =>
        matches(policy.spec.podSelector.matchLabels, labels) &&
        (policy.spec.ingress ?? []).some((rule: Manifest) => !rule.from || rule.from.some((peer: Manifest) => peer.namespaceSelector && !peer.podSelector)),
    );
    // Ingress from another namespace (the ingress controller's, monitoring's) is "outside"; only the gateway's http port may be reached so.
    const outside = policies.filter(
      (policy) =>
        matches(policy.spec.podSelector.matchLabels, labels) &&
        (policy.spec.ingress ?? []).some(
          (rule: Manifest) =>
            (!rule.from || rule.from.some((peer: Manifest) => peer.namespaceSelector || peer.ipBlock)) &&
            (rule.ports ?? [{}]).some((port: Manifest) => port.port !== 'metrics'),
        ),
    );
    if (labels['app.kubernetes.io/component'] !== 'gateway' && outside.length > 0) problems.push(`Deployment/${deployment.metadata.name}: reachable from outside the service`);
    if (labels['app.kubernetes.io/component'] === 'gateway' && !fromAnywhere && outside.length === 0) problems.push('Deployment/ots-gateway: not reachable from outside');
  }
  if (of('Job').length === 0) problems.push('no Job runs the migrations');
  return problems;
}

/** The environment a Deployment's container gets: its ConfigMaps, and a stand-in value for each Secret it references. */
function environmentOf(deployment: Manifest, manifests: Manifest[]): Record<string, string> {
  const container = deployment.spec.template.spec.containers[0];
  const env: Record<string, string> = {};
  for (const source of container.envFrom ?? []) {
    Object.assign(env, manifests.find((manifest) => manifest.kind === 'ConfigMap' && manifest.metadata.name === source.configMapRef.name)!.data);
  }
  const { privateKey, publicKey } = generateKeys();
  const standIns: Record<string, string> = {
    url: 'postgres://ots@db.example/ots',
    'hmac-secret': 'h'.repeat(32),
    'private-key': privateKey,
    'public-key': publicKey,
    secret: `whsec_${Buffer.alloc(32, 7).toString('base64')}`,
    key: Buffer.alloc(32, 9).toString('base64'),
  };
  for (const variable of container.env ?? []) {
    env[variable.name] = variable.value ?? (variable.name === 'REDIS_URL' ? 'redis://redis.example:6379' : standIns[variable.valueFrom.secretKeyRef.key]!);
  }
  return env;
}

let keys: { privateKey: string; publicKey: string } | undefined;
function generateKeys() {
  if (!keys) {
    const pair = generateKeyPairSync('ed25519');
    keys = { privateKey: pair.privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(), publicKey: pair.publicKey.export({ format: 'pem', type: 'spki' }).toString() };
  }
  return keys;
}

/** What a release applies, in this order: its migrations, waited for, then its workloads. */
const RELEASES = [
  { migrations: 'migrate', workloads: 'base' },
  { migrations: 'overlays/production-migrate', workloads: 'overlays/production' },
];

describe.each(RELEASES)('the Kubernetes manifests ($migrations, then $workloads)', ({ migrations, workloads }) => {
  const migrationManifests = render(migrations);
  const workloadManifests = render(workloads);
  const manifests = [...migrationManifests, ...workloadManifests];

  it('are every one valid against the Kubernetes schemas', () => {
    expect(manifests.length).toBeGreaterThan(0);
    expect(manifests.flatMap(schemaProblems)).toEqual([]);
  });

  it('follow our rules: probes, limits, budgets, autoscalers of at least 2, pinned non-root read-only containers, referenced Secrets', () => {
    const problems = policyProblems(manifests);
    // The base leaves the image's version to the overlay.
    expect(workloads === 'base' ? problems.filter((problem) => !problem.includes('is not pinned')) : problems).toEqual([]);
  });

  it('run the gateway and every subgraph, each with what its process needs to start in production', () => {
    const deployments = manifests.filter((manifest) => manifest.kind === 'Deployment');
    expect(deployments.map((deployment) => deployment.metadata.name).sort()).toEqual(['ots-gateway', ...SERVICE_NAMES.map((name) => `ots-${name}`)].sort());
    for (const deployment of deployments) {
      const service = deployment.metadata.name.replace(/^ots-/, '') as ServiceName | 'gateway';
      expect(deployment.spec.template.spec.containers[0].command, deployment.metadata.name).toEqual(['node', `dist/${service}/main.js`]);
      const env = environmentOf(deployment, manifests);
      // Each loads its configuration as its entry point does: the gateway (and the admin CLI, run in
      // a gateway pod) with the API-key secret it hashes keys with; a subgraph without it, and not given it.
      const config = service === 'gateway' ? loadConfig(env) : loadSubgraphConfig(env);
      expect(config.production).toBe(true);
      if (service === 'gateway') {
        const { API_KEY_HMAC_SECRET: _secret, ...withoutSecret } = env;
        expect(() => loadConfig(withoutSecret)).toThrow('NODE_ENV=production refuses development defaults; set API_KEY_HMAC_SECRET');
      } else {
        expect(env, deployment.metadata.name).not.toHaveProperty('API_KEY_HMAC_SECRET');
      }
      // The gateway reads API keys from the accounts database, and listens for the streams' wake-ups on the events database.
      for (const database of service === 'gateway' ? (['accounts', 'events'] as const) : [service]) {
        expect(databaseUrlOf(config, database), `${deployment.metadata.name}: ${database}`).toBeDefined();
      }
      // Only the gateway signs assertions; the subgraphs verify them with the public key.
      if (service === 'gateway') expect(config.assertionPrivateKey, deployment.metadata.name).toBeDefined();
      else expect(config.assertionPrivateKey, deployment.metadata.name).toBeUndefined();
      if (service === 'gateway') expect(config.redisUrl).toBeDefined();
      if (['orders', 'strategies', 'fills', 'events'].includes(service)) expect(config.eventsIngestSecret, deployment.metadata.name).toBeDefined();
      if (service === 'events') expect(config.webhookSecretKey).toBeDefined();
    }
    // One migration Job per subgraph, holding that subgraph's database and nothing else.
    const jobs = migrationManifests.filter((manifest) => manifest.kind === 'Job');
    expect(jobs.map((job) => job.spec.template.spec.containers[0].command.at(-1)).sort()).toEqual([...SERVICE_NAMES].sort());
    for (const job of jobs) {
      const service = job.spec.template.spec.containers[0].command.at(-1) as ServiceName;
      const env = environmentOf(job, manifests);
      expect(Object.keys(env)).toEqual([`${service.toUpperCase()}_DATABASE_URL`]);
      expect(databaseUrlOf(loadConfig(env), service)).toBeDefined();
    }
  });

  it('keep the migrations apart: applied and waited for before any Deployment rolls, needing nothing the workloads create', () => {
    const nameOf = (manifest: Manifest) => `${manifest.kind}/${manifest.metadata.name}`;
    expect(workloadManifests.filter((manifest) => manifest.kind === 'Job').map(nameOf)).toEqual([]);
    expect(migrationManifests.length).toBeGreaterThan(0);
    // Only Jobs: `kubectl wait --for=condition=complete` on everything the kustomization renders ends.
    expect(migrationManifests.filter((manifest) => manifest.kind !== 'Job').map(nameOf)).toEqual([]);
    // On a first install the workloads' ServiceAccount and ConfigMap do not exist yet when the Jobs run.
    for (const job of migrationManifests) {
      expect(job.spec.template.spec.serviceAccountName, nameOf(job)).toBeUndefined();
      expect(job.spec.template.spec.containers.flatMap((container: Manifest) => container.envFrom ?? []), nameOf(job)).toEqual([]);
    }
  });
});

describe('a production release', () => {
  const jobs = render('overlays/production-migrate');
  const workloads = render('overlays/production');
  const deployments = workloads.filter((manifest) => manifest.kind === 'Deployment');
  const images = new Set(deployments.map((deployment) => deployment.spec.template.spec.containers[0].image as string));

  it('migrates with the image its Deployments run, in their namespace', () => {
    expect(images.size).toBe(1);
    for (const job of jobs) {
      expect(job.spec.template.spec.containers[0].image, job.metadata.name).toBe([...images][0]);
      expect(job.metadata.namespace, job.metadata.name).toBe(deployments[0]!.metadata.namespace);
    }
  });

  it("names its Jobs after its version, so that they are new Jobs and not an edit of the previous release's", () => {
    const version = /:([^:/@]+)$/.exec([...images][0]!)?.[1];
    expect(jobs.map((job) => job.metadata.name).sort()).toEqual(SERVICE_NAMES.map((name) => `ots-migrate-${name}-${version}`).sort());
  });
});

describe('the production gateway', () => {
  it("believes X-Forwarded-* only from the ingress controller's pods: addresses the overlay names, no whole private range", () => {
    const workloads = render('overlays/production');
    const gateway = workloads.find((manifest) => manifest.kind === 'Deployment' && manifest.metadata.name === 'ots-gateway')!;
    const trusted = loadConfig(environmentOf(gateway, workloads)).trustProxy;
    expect(trusted).not.toBe(false);
    // An address or a CIDR each, as `TRUST_PROXY` takes them; not `uniquelocal`, which every pod's address is in.
    for (const entry of trusted || []) expect(isIP(entry.replace(/\/\d+$/, '')), entry).not.toBe(0);
  });
});

describe('the checks themselves', () => {
  const manifests = [...render('overlays/production-migrate'), ...render('overlays/production')];
  const copy = (): Manifest[] => structuredClone(manifests);
  const gatewayOf = (all: Manifest[]) => all.find((manifest) => manifest.kind === 'Deployment' && manifest.metadata.name === 'ots-gateway')!;

  it('refuse a misspelt field, a wrong type and a missing required field', () => {
    const all = copy();
    const gateway = gatewayOf(all);
    gateway.spec.template.spec.containers[0].readinessProbe.periodSecond = 5;
    expect(schemaProblems(gateway)).toEqual(['Deployment/ots-gateway: unknown field .spec.template.spec.containers[0].readinessProbe.periodSecond']);
    delete gateway.spec.template.spec.containers[0].readinessProbe.periodSecond;
    gateway.spec.revisionHistoryLimit = '5';
    expect(schemaProblems(gateway)).toEqual([expect.stringContaining('revisionHistoryLimit must be integer')]);
    gateway.spec.revisionHistoryLimit = 5;
    delete gateway.spec.selector;
    expect(schemaProblems(gateway)).toEqual(['Deployment/ots-gateway: data/spec must have required property selector']);
  });

  it('refuse `latest`, a missing probe, limit, budget or autoscaler, a writable root, an inlined secret', () => {
    const all = copy();
    const gateway = gatewayOf(all);
    const container = gateway.spec.template.spec.containers[0];
    container.image = 'registry.example.com/ots/app:latest';
    delete container.livenessProbe;
    delete container.resources.limits;
    container.securityContext.readOnlyRootFilesystem = false;
    container.env.push({ name: 'REDIS_URL', value: 'redis://:password@redis:6379' });
    const withoutBudget = all.filter((manifest) => !(manifest.kind === 'PodDisruptionBudget' && manifest.metadata.name === 'ots-orders'));
    withoutBudget.find((manifest) => manifest.kind === 'HorizontalPodAutoscaler' && manifest.metadata.name === 'ots-fills')!.spec.minReplicas = 1;
    expect(policyProblems(withoutBudget).sort()).toEqual(
      [
      'Deployment/ots-gateway container gateway: image registry.example.com/ots/app:latest is not pinned to a version',
      'Deployment/ots-gateway container gateway: the root file system is writable',
      'Deployment/ots-gateway container gateway: no cpu limit',
      'Deployment/ots-gateway container gateway: no memory limit',
      'Deployment/ots-gateway container gateway: REDIS_URL is not read from a Secret',
      'Deployment/ots-gateway: no livenessProbe on /healthz',
      'Deployment/ots-orders: no PodDisruptionBudget',
      'Deployment/ots-fills: the HorizontalPodAutoscaler allows fewer than 2 replicas',
      'Deployment/ots-fills: its PodDisruptionBudget lets every replica go at once',
    ].sort(),
    );
  });
});
