import { randomUUID, type KeyObject } from 'node:crypto';
import { signAssertion } from '@ots/shared/assertion';
import type { Config } from '@ots/shared/config';
import type { Logger } from '@ots/shared/logger';
import { fillSweeperMetrics } from '@ots/shared/metrics';
import { settlePendingFill } from './operations.ts';
import { findStalePendingFills, pendingFillsBacklog, type FillsDb } from './repository.ts';

/** Fills settled per sweep; a full batch starts the next sweep at once. */
export const SWEEP_BATCH_SIZE = 100;

export interface SweepDeps {
  db: FillsDb;
  log: Logger;
  config: Pick<Config, 'subgraphUrls' | 'limits' | 'assertionTtlSeconds' | 'fillSweepMinAgeMs'>;
  /** Signs the assertion of each fill's account: there is no request whose assertion could be forwarded. */
  assertionPrivateKey: KeyObject;
}

export interface SweepReport {
  examined: number;
  applied: number;
  refused: number;
  /** Orders did not answer; the sweep stopped early and the rest waits for the next one. */
  ordersUnavailable: boolean;
}

/**
 * One pass of recovery: every fill left pending longer than `fillSweepMinAgeMs` (younger ones belong
 * to a request still in flight) is settled exactly as a request would settle it, acting for the
 * account and key that recorded it. Running alongside a request or another sweeper is safe: orders
 * gives each fill id one verdict, and marking applied or dropping a fill is idempotent.
 */
export async function sweepPendingFills(deps: SweepDeps): Promise<SweepReport> {
  const stale = await findStalePendingFills(deps.db, deps.config.fillSweepMinAgeMs, SWEEP_BATCH_SIZE);
  const report: SweepReport = { examined: stale.length, applied: 0, refused: 0, ordersUnavailable: false };
  const requestId = `fill-sweep-${randomUUID()}`;
  for (const fill of stale) {
    const assertion = signAssertion(
      deps.assertionPrivateKey,
      // Recording a fill needed fills:write; the sweeper finishes that recording and nothing else.
      { accountId: fill.account_id, apiKeyId: fill.api_key_id, scopes: ['fills:write'] },
      deps.config.assertionTtlSeconds,
    );
    const orders = { url: deps.config.subgraphUrls.orders, timeoutMs: deps.config.limits.subgraphTimeoutMs, assertion, requestId };
    const result = await settlePendingFill({ db: deps.db, orders, log: deps.log }, fill);
    if (result.ok) {
      report.applied += 1;
      fillSweeperMetrics().settled.inc({ result: 'applied' });
      deps.log.info({ fillId: fill.id, accountId: fill.account_id }, 'recovery applied a pending fill');
    } else if (result.error.code === 'TEMPORARILY_UNAVAILABLE') {
      report.ordersUnavailable = true;
      break;
    } else {
      report.refused += 1;
      fillSweeperMetrics().settled.inc({ result: 'refused' });
      deps.log.info({ fillId: fill.id, accountId: fill.account_id, code: result.error.code }, 'recovery dropped a fill that orders refused');
    }
  }
  return report;
}

/** Starts the recovery sweeper of the fills service; the returned function stops it. */
export function startFillSweeper(deps: SweepDeps & { config: Pick<Config, 'fillSweepIntervalMs'> }): () => Promise<void> {
  const sweep = async () => {
    const report = await sweepPendingFills(deps);
    await recordBacklog(deps.db);
    return report;
  };
  return sweepPeriodically(sweep, deps.config.fillSweepIntervalMs, deps.log);
}

/** After each sweep: what is still pending, for the backlog metrics (alert when it grows or ages). */
async function recordBacklog(db: FillsDb): Promise<void> {
  const backlog = await pendingFillsBacklog(db);
  const metrics = fillSweeperMetrics();
  metrics.backlog.set(backlog.count);
  metrics.oldestPendingSeconds.set(backlog.oldestRecordedAt ? Math.max(0, (Date.now() - backlog.oldestRecordedAt.getTime()) / 1000) : 0);
}

/**
 * Sweeps every `intervalMs` (at once again after a full batch), never two sweeps at a time. The
 * returned stop waits for a sweep in progress, so shutdown cuts no settlement off halfway.
 */
export function sweepPeriodically(sweep: () => Promise<SweepReport>, intervalMs: number, log: Pick<Logger, 'error'>): () => Promise<void> {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;

  const schedule = (delayMs: number) => {
    if (stopped) return;
    timer = setTimeout(() => {
      running = sweep().then(
        (report) => {
          running = undefined;
          const fullBatch = report.examined === SWEEP_BATCH_SIZE && !report.ordersUnavailable;
          schedule(fullBatch ? 0 : intervalMs);
        },
        (error: unknown) => {
          running = undefined;
          log.error({ err: error }, 'fill recovery sweep failed; retrying at the next interval');
          schedule(intervalMs);
        },
      );
    }, delayMs);
  };
  schedule(intervalMs);

  return async () => {
    stopped = true;
    clearTimeout(timer);
    await running;
  };
}
