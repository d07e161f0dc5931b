import type { FastifyInstance } from 'fastify';
import { LEGACY_FILLS_PATH, legacyFillsStep } from '@ots/shared/contracts/internal-routes';
import { registerRelayRoute, requireIngestSecret } from '@ots/shared/outbox';
import type { ServiceRuntime } from '@ots/shared/service';
import { completeLegacyApplications, findApplicationsLackingExecutionId, type OrdersDatabase } from './repository.ts';

/**
 * The backfill of the applications recorded before migration 005, which lack the fill's execution
 * id, fee, liquidity and execution time. Orders cannot read them back (the fills subgraph keeps them
 * in its own schema), so the fills subgraph walks them with this route, from its start-up: each step
 * brings the terms of the applications the previous answer named, and the answer names the next ones
 * that lack them. Until an account's are all complete, applyFill answers an execution id it does not
 * find MAYBE_RECORDED_BEFORE_UPGRADE, and fills looks in its own fills first (its README, *Fills
 * recorded before the upgrade*): correctness never waits for the backfill, only the extra call does.
 */

const BATCH_SIZE = 500;
const BODY_LIMIT = 5 * 1024 * 1024;

export async function registerLegacyFillsRoute(app: FastifyInstance, runtime: ServiceRuntime<OrdersDatabase>): Promise<void> {
  await registerRelayRoute(app, {
    path: LEGACY_FILLS_PATH,
    secret: requireIngestSecret(runtime.config),
    bodyLimit: BODY_LIMIT,
    refusal: 'Invalid signature',
    handle: async (body, _text, reply) => {
      const parsed = legacyFillsStep.safeParse(body);
      if (!parsed.success) return reply.code(400).send({ detail: 'fills must be kept fills, after an application or null' });
      const { fills, after } = parsed.data;
      const completed = await completeLegacyApplications(
        runtime.db,
        fills.map((fill) => ({ ...fill, fillId: fill.id })),
      );
      if (completed < fills.length) {
        // Either completed by an earlier walk, or the execution id is taken by an application made after the upgrade: applied twice before this backfill existed.
        runtime.log.warn({ sent: fills.length, completed }, 'legacy fills: some applications were not completed; any still lacking an execution id was applied twice and needs a repair');
      }
      const lacking = await findApplicationsLackingExecutionId(runtime.db, after, BATCH_SIZE);
      return reply.send({ completed, lacking: lacking.map((application) => ({ accountId: application.account_id, fillId: application.fill_id })) });
    },
  });
}
