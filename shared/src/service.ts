import type { Kysely } from 'kysely';
import type { FastifyInstance } from 'fastify';
import type { DocumentNode } from 'graphql';
import { databaseUrlOf, databaseVariablesOf, serviceSettings, type ServiceName, type ServiceSettings, type SubgraphProcessConfig } from './config.ts';
import { createDatabase, databaseProbe, migrateSchema, type SchemaMigrations } from './db.ts';
import { createLogger, type Logger } from './logger.ts';
import { startSubgraphServer, type BaseContext, type CallerRoute, type RunningServer, type SubgraphResolvers } from './subgraph-server.ts';
import { startProcessTelemetry, type ProcessTelemetry } from './telemetry.ts';

export interface ServiceRuntime<DB, Name extends ServiceName = ServiceName> {
  /** The subgraph this runtime belongs to. */
  service: Name;
  /** Its slice of the configuration: what every subgraph reads, and its own settings. */
  config: ServiceSettings<Name>;
  db: Kysely<DB>;
  log: Logger;
}

/** What each subgraph declares; `runService` turns it into a running process part. */
export interface ServiceDefinition<DB, Context extends BaseContext, Name extends ServiceName = ServiceName> extends SchemaMigrations {
  name: Name;
  typeDefs: DocumentNode;
  /** The service's map, typed by the `Resolvers` generated from its schema.graphql. */
  resolvers: SubgraphResolvers;
  createContext(base: BaseContext, runtime: ServiceRuntime<DB, Name>): Context;
  /** Background work (e.g. an outbox relay); the returned function stops it. */
  startBackground?(runtime: ServiceRuntime<DB, Name>): () => Promise<void>;
  /** Routes other subgraphs call on a caller's behalf beside /graphql, with the same assertion check. */
  callerRoutes?: CallerRoute<Context>[];
  /** Routes besides /graphql (e.g. the events service's internal ingest); they get no assertion check. */
  registerRoutes?(app: FastifyInstance, runtime: ServiceRuntime<DB, Name>): Promise<void>;
}

export interface RunOptions {
  config: SubgraphProcessConfig;
  /** Defaults to the configured port of the service; 0 picks a free one (tests). */
  port?: number;
  logger?: Logger;
}

export async function migrateService(definition: SchemaMigrations, databaseUrl: string) {
  await migrateSchema(databaseUrl, definition);
}

/** Starts a subgraph on its own pool and port. Migrations are run beforehand, by `migrateService`. */
export async function runService<DB, Context extends BaseContext, Name extends ServiceName>(
  definition: ServiceDefinition<DB, Context, Name>,
  options: RunOptions,
): Promise<RunningServer> {
  const { config } = options;
  const databaseUrl = databaseUrlOf(config, definition.name);
  if (!databaseUrl) throw new Error(`${definition.name}: ${databaseVariablesOf(definition.name)} is required`);
  const log = options.logger ?? createLogger(definition.name, config.logLevel);
  const db = createDatabase<DB>({ url: databaseUrl, schema: definition.schema, applicationName: definition.name });
  const probe = databaseProbe(databaseUrl, definition.name);
  const runtime: ServiceRuntime<DB, Name> = { service: definition.name, config: serviceSettings(config, definition.name), db, log };
  const stopBackground = definition.startBackground?.(runtime);
  const server = await startSubgraphServer<Context>({
    name: definition.name,
    typeDefs: definition.typeDefs,
    resolvers: definition.resolvers,
    config,
    logger: log,
    port: options.port ?? config.ports[definition.name],
    createContext: (base) => definition.createContext(base, runtime),
    callerRoutes: definition.callerRoutes,
    registerRoutes: definition.registerRoutes && ((app) => definition.registerRoutes!(app, runtime)),
    isReady: () => probe.reachable(),
  });
  return {
    ...server,
    close: async () => {
      await server.close();
      await stopBackground?.();
      await db.destroy();
      await probe.close();
    },
  };
}

/** The body of every `services/<name>/src/main.ts`: migrate-free start, stop on SIGTERM/SIGINT after draining. */
export async function runServiceProcess<DB, Context extends BaseContext, Name extends ServiceName>(
  definition: ServiceDefinition<DB, Context, Name>,
  config: SubgraphProcessConfig,
): Promise<void> {
  const logger = createLogger(definition.name, config.logLevel);
  let server: RunningServer;
  let telemetry: ProcessTelemetry;
  try {
    telemetry = await startProcessTelemetry(config, logger);
    server = await runService(definition, { config, logger });
  } catch (error) {
    // A missing setting or a taken port is one line for the operator, not a stack trace.
    process.stderr.write(`${definition.name} cannot start: ${(error as Error).message}\n`);
    process.exit(1);
  }
  stopOnSignals(async () => {
    await server.close();
    await telemetry.close();
  }, logger);
}

/**
 * Runs `stop` (drain and close) once, on the first SIGTERM or SIGINT, then exits. Later signals are
 * ignored: npm forwards a terminal's Ctrl-C to a process that received it already. The last log
 * line says that everything stopped, so whoever watches a stop knows it is over.
 */
export function stopOnSignals(stop: () => Promise<void>, log: Logger): void {
  let stopping = false;
  const handle = () => {
    if (stopping) return;
    stopping = true;
    stop().then(
      () => {
        log.info('stopped: every server, connection and background task is closed');
        process.exit(0);
      },
      (error: unknown) => {
        process.stderr.write(`stopping failed: ${(error as Error).message}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', handle);
  process.on('SIGINT', handle);
}
