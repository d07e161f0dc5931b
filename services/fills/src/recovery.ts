import type { FastifyInstance } from 'fastify';
import type { FillRecordedData } from '@ots/shared/contracts/events';
import { RECORDED_FILLS_PATH, recordedFillsBatch } from '@ots/shared/contracts/internal-routes';
import type { Uuid } from '@ots/shared/ids';
import { registerRelayRoute, requireIngestSecret } from '@ots/shared/outbox';
import type { ServiceRuntime } from '@ots/shared/service';
import { keepFills, type FillsDatabase, type KeptFill } from './repository.ts';

/**
 * The recovery path of recordFill. Orders writes every fill it records, as a `fill.recorded` event,
 * into its outbox and into an outbox for fills in the statement that records it, and a relay of
 * that table's own posts those events here (signed like every relay's batch, shared/src/outbox.ts),
 * so that this route being down holds back none of the events service's. Each is
 * kept as the request that recorded it would have kept it, once by its id: so a fill whose request
 * failed between orders' commit and its own (a crash of this process, a lost answer) is kept all the
 * same, and a fill the request kept already changes nothing.
 */

const BODY_LIMIT = 5 * 1024 * 1024;

function keptFillOfEvent(accountId: Uuid, data: FillRecordedData): KeptFill {
  return {
    id: data.id,
    accountId,
    orderSubmissionId: data.orderSubmissionId,
    strategyId: data.orderSubmission.strategyId,
    symbol: data.symbol,
    side: data.side,
    executionId: data.executionId,
    quantity: data.quantity,
    price: data.price,
    fee: data.fee,
    liquidity: data.liquidity,
    executedAt: data.executedAt,
    recordedAt: data.recordedAt,
  };
}

export async function registerRecoveryRoute(app: FastifyInstance, runtime: ServiceRuntime<FillsDatabase>): Promise<void> {
  await registerRelayRoute(app, {
    path: RECORDED_FILLS_PATH,
    secret: requireIngestSecret(runtime.config),
    bodyLimit: BODY_LIMIT,
    refusal: 'Invalid relay signature',
    handle: async (body, _text, reply) => {
      const parsed = recordedFillsBatch.safeParse(body);
      if (!parsed.success) return reply.code(400).send({ detail: 'events must be fill.recorded events as orders records them' });
      await keepFills(
        runtime.db,
        parsed.data.events.map((event) => keptFillOfEvent(event.accountId, event.data)),
      );
      return reply.send({ kept: parsed.data.events.length });
    },
  });
}
