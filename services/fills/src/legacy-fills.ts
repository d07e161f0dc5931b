import { LEGACY_FILLS_PATH, legacyFillsAnswer } from '@ots/shared/contracts/internal-routes';
import { startLoop } from '@ots/shared/background';
import { parseUuid, type Uuid } from '@ots/shared/ids';
import { postJson } from '@ots/shared/http-client';
import { requireIngestSecret, signIngestRequest } from '@ots/shared/outbox';
import type { ServiceRuntime } from '@ots/shared/service';
import { findKeptFillsById, type FillsDatabase } from './repository.ts';

/**
 * The backfill of orders' applications recorded before its migration 005, which lack the fill's
 * execution id, fee, liquidity and execution time: this subgraph kept every fill whole, so it brings
 * them back through orders' route (`LEGACY_FILLS_PATH`, services/orders/src/legacy-fills.ts), each
 * step answering the terms of the applications orders named in the step before. Run by every fills
 * process from its start until one walk is done; once none lacks them, a walk is one call. Orders
 * gives up nothing meanwhile: until an account's applications are complete, an execution id it does
 * not find is looked up here first (recordFill), so this only takes that lookup off the request's path.
 */

const STEP_TIMEOUT_MS = 30_000;
const MAX_BACKOFF_MS = 60_000;
/** setTimeout's longest delay. */
const NEVER_AGAIN_MS = 2 ** 31 - 1;

/** One whole walk; throws when orders cannot be reached or refuses a step (e.g. a release without the route). */
async function backfillLegacyFills(runtime: ServiceRuntime<FillsDatabase>): Promise<number> {
  const url = new URL(LEGACY_FILLS_PATH, runtime.config.subgraphUrls.orders);
  const secret = requireIngestSecret(runtime.config);
  let after: { accountId: string; fillId: string } | null = null;
  let fills: Awaited<ReturnType<typeof findKeptFillsById>> = [];
  let completed = 0;
  for (;;) {
    const body = JSON.stringify({
      after,
      fills: fills.map((fill) => ({
        accountId: fill.account_id,
        id: fill.id,
        executionId: fill.execution_id,
        fee: fill.fee,
        liquidity: fill.liquidity,
        executedAt: fill.executed_at.toISOString(),
      })),
    });
    const answer = await postJson({ url, body, headers: signIngestRequest(secret, body), timeoutMs: STEP_TIMEOUT_MS });
    if (answer.status !== 200) throw new Error(`orders answered the legacy fills backfill with HTTP ${answer.status}`);
    const { completed: completedNow, lacking } = legacyFillsAnswer.parse(JSON.parse(answer.body));
    completed += completedNow;
    if (lacking.length === 0) return completed;
    const ids = lacking.map((application) => parseUuid(application.fillId)).filter((id): id is Uuid => id !== undefined);
    fills = await findKeptFillsById(runtime.db, ids);
    if (fills.length < lacking.length) runtime.log.warn({ lacking: lacking.length, kept: fills.length }, 'legacy fills: orders applied fills this subgraph does not keep');
    after = lacking.at(-1)!;
  }
}

/** Runs the walk in the background, backing off while orders is down or not yet the release with the route. */
export function startLegacyFillsBackfill(runtime: ServiceRuntime<FillsDatabase>): () => Promise<void> {
  let backoffMs = 1_000;
  const loop = startLoop(
    'legacy fills backfill',
    async () => {
      try {
        const completed = await backfillLegacyFills(runtime);
        if (completed > 0) runtime.log.info({ completed }, "legacy fills: orders' applications recorded before its migration 005 are complete");
        // Done for the life of the process: nothing wakes the loop again.
        return NEVER_AGAIN_MS;
      } catch (error) {
        runtime.log.warn({ err: error }, 'legacy fills backfill did not finish; trying again');
        backoffMs = Math.min(MAX_BACKOFF_MS, backoffMs * 2);
        return backoffMs;
      }
    },
    runtime.log,
  );
  return () => loop.stop();
}
