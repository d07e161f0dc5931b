import { databaseUrlOf, databaseVariablesOf, gatewaySettings, type Config, type ServiceName } from '@ots/shared/config';
import { createLogger, type Logger } from '@ots/shared/logger';
import { migrateService, runService } from '@ots/shared/service';
import type { RunningServer } from '@ots/shared/subgraph-server';
import { startGateway } from '@ots/gateway/server';
import { openKeyStore, type OpenedKeyStore } from '@ots/accounts';
import { allServices } from './services.ts';

export interface RunningStack {
  config: Config;
  gateway: RunningServer;
  subgraphs: Map<ServiceName, RunningServer>;
  keys: OpenedKeyStore;
  /** Stops one subgraph (outage and crash tests) and starts it again on the same port. */
  stopService(name: ServiceName): Promise<void>;
  startService(name: ServiceName): Promise<void>;
  close(): Promise<void>;
}

/** Migrates every subgraph's schema, each on its own database (`databaseUrlOf`). */
export async function migrateAll(config: Pick<Config, 'databaseUrl' | 'serviceDatabaseUrls'>): Promise<void> {
  for (const service of allServices) {
    const databaseUrl = databaseUrlOf(config, service.name);
    if (!databaseUrl) throw new Error(`${service.name}: ${databaseVariablesOf(service.name)} is required`);
    await migrateService(service, databaseUrl);
  }
}

/**
 * Starts the five subgraphs and the gateway in this process. With `freePorts`, every server takes a
 * free port and the gateway is pointed at the subgraphs' actual addresses (tests run stacks side by side).
 */
export async function launchStack(baseConfig: Config, options: { freePorts?: boolean; logger?: Logger } = {}): Promise<RunningStack> {
  const config: Config = { ...baseConfig, ports: { ...baseConfig.ports }, subgraphUrls: { ...baseConfig.subgraphUrls } };
  const logger = options.logger ?? createLogger('ots', config.logLevel);
  const subgraphs = new Map<ServiceName, RunningServer>();
  const definitions = new Map(allServices.map((service) => [service.name, service]));

  const startService = async (name: ServiceName) => {
    const definition = definitions.get(name)!;
    const port = subgraphs.has(name) || !options.freePorts ? config.ports[name] : 0;
    const server = await runService(definition, { config, port, logger: logger.child({ service: name }) });
    subgraphs.set(name, server);
    config.ports[name] = server.port;
    config.subgraphUrls[name] = server.url;
  };
  // The config object is shared by reference, so a later-started subgraph's URL is seen by those before it.
  for (const service of allServices) await startService(service.name);

  const keys = openKeyStore(config, logger, { listen: true });
  const gateway = await startGateway({
    config: gatewaySettings(config),
    keyStore: keys.keyStore,
    redis: keys.redis,
    logger: logger.child({ service: 'gateway' }),
    port: options.freePorts ? 0 : config.ports.gateway,
  });

  const stopped = new Set<ServiceName>();
  return {
    config,
    gateway,
    subgraphs,
    keys,
    stopService: async (name) => {
      await subgraphs.get(name)?.close();
      stopped.add(name);
    },
    startService: async (name) => {
      await startService(name);
      stopped.delete(name);
    },
    close: async () => {
      await gateway.close();
      for (const [name, server] of [...subgraphs].reverse()) if (!stopped.has(name)) await server.close();
      await keys.close();
    },
  };
}
