import { hkdfSync } from 'node:crypto';
import type { Kysely } from 'kysely';
import { isSealed, openSecret, sealSecret } from '@ots/shared/secret-box';
import type { AccountsDb } from './repository.ts';

type IdempotencyDatabase = {
  idempotency_keys: {
    account_id: string;
    key: string;
    request_hash: Buffer;
    created_at: Date;
    locked_until: Date;
    response_status: number | null;
    response_content_type: string | null;
    response_body: string | null;
  };
};

export interface StoredAnswer {
  status: number;
  contentType: string;
  body: string;
}

export type IdempotencyClaim =
  | { kind: 'claimed' }
  | { kind: 'replay'; answer: StoredAnswer }
  | { kind: 'different-request' }
  | { kind: 'in-progress' };

export interface IdempotencyStoreOptions {
  /** How long a key and its answer are kept: 24 hours (contract section 4). */
  retentionMs?: number;
  /**
   * How long a claim without an answer counts as in progress unless renewed. The gateway that claimed
   * the key renews it while the request still runs (`renewLease`), so a claim past its lease is one
   * whose gateway died or had no answer to keep: its request may have run, and `claim` keeps the
   * caller's `interrupted` answer for it.
   */
  leaseMs?: number;
  /** How many expired keys one statement of the purge deletes. */
  purgeBatch?: number;
}

/**
 * `Idempotency-Key` answers, per account, in the accounts schema: Postgres makes them durable across
 * restarts and shared by every gateway replica, and the primary key makes a claim atomic, so of two
 * concurrent requests with one key exactly one runs. An answer may carry a secret shown once (a
 * webhook endpoint's signing secret): it is kept sealed (shared/src/secret-box.ts)
 * under a key derived from API_KEY_HMAC_SECRET, bound to its account and key.
 */
export class IdempotencyStore {
  private readonly db: Kysely<IdempotencyDatabase>;
  private readonly answerKey: Buffer;
  readonly retentionMs: number;
  readonly leaseMs: number;
  private readonly purgeBatch: number;

  /** `secret`: API_KEY_HMAC_SECRET, which every gateway holds and the database does not. */
  constructor(db: AccountsDb, secret: Buffer, options: IdempotencyStoreOptions = {}) {
    this.db = db.withTables<IdempotencyDatabase>() as unknown as Kysely<IdempotencyDatabase>;
    this.answerKey = Buffer.from(hkdfSync('sha256', secret, Buffer.alloc(0), 'idempotency answers', 32));
    this.retentionMs = options.retentionMs ?? 24 * 60 * 60 * 1000;
    this.leaseMs = options.leaseMs ?? 30_000;
    this.purgeBatch = options.purgeBatch ?? 5_000;
  }

  /**
   * Claims the key for this request, or says how to answer instead. A key past its retention is taken
   * over in the same statement. A claim of the same request abandoned past its lease is given the
   * `interrupted` answer (which says that the request may have run) and replayed it, now and for the
   * rest of the 24 hours: running it again could repeat what it did before its gateway died.
   */
  async claim(accountId: string, key: string, requestHash: Buffer, now: Date, interrupted: StoredAnswer): Promise<IdempotencyClaim> {
    const expiredBefore = new Date(now.getTime() - this.retentionMs);
    // A row deleted between the claim and the read (a released claim) is claimed on the next pass.
    for (;;) {
      const claimed = await this.db
        .insertInto('idempotency_keys')
        .values({ account_id: accountId, key, request_hash: requestHash, created_at: now, locked_until: new Date(now.getTime() + this.leaseMs) })
        .onConflict((conflict) =>
          conflict
            .columns(['account_id', 'key'])
            .doUpdateSet((eb) => ({
              request_hash: eb.ref('excluded.request_hash'),
              created_at: eb.ref('excluded.created_at'),
              locked_until: eb.ref('excluded.locked_until'),
              response_status: null,
              response_content_type: null,
              response_body: null,
            }))
            .where('idempotency_keys.created_at', '<', expiredBefore),
        )
        .returning('key')
        .executeTakeFirst();
      if (claimed) return { kind: 'claimed' };

      const row = await this.db
        .selectFrom('idempotency_keys')
        .select(['request_hash', 'locked_until', 'response_status', 'response_content_type', 'response_body'])
        .where('account_id', '=', accountId)
        .where('key', '=', key)
        .executeTakeFirst();
      if (!row) continue;
      if (!row.request_hash.equals(requestHash)) return { kind: 'different-request' };
      if (row.response_status === null) {
        if (row.locked_until >= now) return { kind: 'in-progress' };
        // Its gateway renews a claim until it has kept the answer: this one's died. The next pass
        // replays what is kept now, this answer or the one its gateway kept just before.
        await this.keep(accountId, key, interrupted, now);
        continue;
      }
      const body = row.response_body ?? '';
      return {
        kind: 'replay',
        answer: {
          status: row.response_status,
          contentType: row.response_content_type ?? 'application/json',
          // An answer kept before answers were sealed is plain, and gone within the retention.
          body: isSealed(body) ? openSecret(this.answerKey, body, answerContext(accountId, key)) : body,
        },
      };
    }
  }

  /** Keeps the answer of a claimed request, for its repeats. */
  async complete(accountId: string, key: string, answer: StoredAnswer): Promise<void> {
    await this.keep(accountId, key, answer);
  }

  /** Keeps `answer` unless one is kept already; with `lapsedBefore`, only for a claim whose lease ended before then. */
  private async keep(accountId: string, key: string, answer: StoredAnswer, lapsedBefore?: Date): Promise<void> {
    let update = this.db
      .updateTable('idempotency_keys')
      .set({ response_status: answer.status, response_content_type: answer.contentType, response_body: sealSecret(this.answerKey, answer.body, answerContext(accountId, key)) })
      .where('account_id', '=', accountId)
      .where('key', '=', key)
      .where('response_status', 'is', null);
    if (lapsedBefore) update = update.where('locked_until', '<', lapsedBefore);
    await update.execute();
  }

  /** Keeps a claim of a request that is still running in progress for another lease. */
  async renewLease(accountId: string, key: string, now: Date): Promise<void> {
    await this.db
      .updateTable('idempotency_keys')
      .set({ locked_until: new Date(now.getTime() + this.leaseMs) })
      .where('account_id', '=', accountId)
      .where('key', '=', key)
      .where('response_status', 'is', null)
      .execute();
  }

  /** Gives a claimed key up unanswered, so that a retry runs the request again: for a request that ran nothing. */
  async release(accountId: string, key: string): Promise<void> {
    await this.db
      .deleteFrom('idempotency_keys')
      .where('account_id', '=', accountId)
      .where('key', '=', key)
      .where('response_status', 'is', null)
      .execute();
  }

  /**
   * Deletes the keys past their retention, in batches, so that no statement outgrows the statement
   * timeout however many keys a day brings; returns how many. Every gateway replica purges: rows
   * another replica's batch holds are skipped (it is deleting them), not waited for.
   */
  async purgeExpired(now: Date): Promise<number> {
    const cutoff = new Date(now.getTime() - this.retentionMs);
    let total = 0;
    for (;;) {
      const result = await this.db
        .deleteFrom('idempotency_keys')
        .where((eb) =>
          eb(
            eb.refTuple('account_id', 'key'),
            'in',
            eb
              .selectFrom('idempotency_keys')
              .select(['account_id', 'key'])
              .where('created_at', '<', cutoff)
              .limit(this.purgeBatch)
              .forUpdate()
              .skipLocked()
              .$asTuple('account_id', 'key'),
          ),
        )
        .executeTakeFirst();
      const deleted = Number(result.numDeletedRows);
      total += deleted;
      if (deleted < this.purgeBatch) return total;
    }
  }
}

/** What a kept answer is bound to: moved to another account's or key's row, it does not open. */
function answerContext(accountId: string, key: string): string {
  return `${accountId}\n${key}`;
}
