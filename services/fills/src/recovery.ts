import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { parseUuid, type Uuid } from '@ots/shared/ids';
import { RECORDED_FILLS_PATH } from '@ots/shared/contracts/internal-routes';
import { registerRelayRoute, requireIngestSecret } from '@ots/shared/outbox';
import type { ServiceRuntime } from '@ots/shared/service';
import { Liquidity, OrderSide } from './generated/enums.ts';
import { keepFills, type FillsDatabase, type KeptFill } from './repository.ts';

/**
 * The recovery path of recordFill. Orders writes every fill it records, as a `fill.recorded` event,
 * into its outbox in the statement that records it, and its relay posts those events here (signed
 * like every relay's batch, shared/src/outbox.ts) before it sends them to the events service. Each is
 * kept as the request that recorded it would have kept it, once by its id: so a fill whose request
 * failed between orders' commit and its own (a crash of this process, a lost answer) is kept all the
 * same, and a fill the request kept already changes nothing.
 */

const BODY_LIMIT = 5 * 1024 * 1024;

const uuid = z.string().transform((value, context) => {
  const parsed = parseUuid(value);
  if (parsed === undefined) {
    context.addIssue({ code: 'custom', message: 'must be a UUID' });
    return z.NEVER;
  }
  return parsed;
});
const decimal = z.string().regex(/^\d+(\.\d+)?$/);
const instant = z.iso.datetime({ offset: true }).transform((value) => new Date(value));

/** The part of a `fill.recorded` event's data (contract section 6) that a fill is kept from. */
const recordedFill = z.object({
  id: uuid,
  orderSubmissionId: uuid,
  executionId: z.string().min(1),
  symbol: z.string(),
  side: z.enum(OrderSide),
  quantity: decimal,
  price: decimal,
  fee: decimal,
  liquidity: z.enum(Liquidity),
  executedAt: instant,
  recordedAt: instant,
  orderSubmission: z.object({ strategyId: uuid.nullable() }),
});

const batch = z.object({
  events: z.array(z.object({ accountId: uuid, type: z.literal('fill.recorded'), data: recordedFill })),
});

function keptFillOfEvent(accountId: Uuid, data: z.output<typeof recordedFill>): KeptFill {
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
      const parsed = batch.safeParse(body);
      if (!parsed.success) return reply.code(400).send({ detail: 'events must be fill.recorded events as orders records them' });
      await keepFills(
        runtime.db,
        parsed.data.events.map((event) => keptFillOfEvent(event.accountId, event.data)),
      );
      return reply.send({ kept: parsed.data.events.length });
    },
  });
}
