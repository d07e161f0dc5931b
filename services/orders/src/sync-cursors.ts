import type { Uuid } from '@ots/shared/ids';
import { keysetPosition } from '@ots/shared/pagination';
import { PositionSeal, SealedFeedCursors } from '@ots/shared/sealed-cursors';
import { SYNC_END_ID, UPDATED_AT_ASC, type AccountSyncCursors } from './domain.ts';

/**
 * The incremental sync's cursors (domain.ts `SyncPosition`): a change stamp and an order id, sealed
 * like every cursor (shared/src/sealed-cursors.ts) under a tag of their own, so that a cursor of the
 * sync as it paged before, by commit order (a transaction id where the time now is), is never
 * misread as a time: it opens only under its former seal, as a `formerCommitPosition`, which the
 * use case turns into a stamp position. A row's position always seals to the same cursor; the
 * position just after the settled stamp (`syncEndAt`) is sealed with a random IV, since that stamp
 * follows the oldest write in flight of the whole service, and two equal ones would tell a client
 * that no order write of any account began in between.
 */
export class SealedSyncCursors {
  private readonly positions: PositionSeal;
  private readonly former: SealedFeedCursors;

  constructor(secret: Buffer, keyInfo: string) {
    this.positions = new PositionSeal(secret, keyInfo, UPDATED_AT_ASC.tag);
    this.former = new SealedFeedCursors(secret, { feed: UPDATED_AT_ASC.formerTag!, keyInfo });
  }

  forAccount(accountId: string): AccountSyncCursors {
    return {
      // Times before 1970 are negative: their 64 bits are kept as two's complement.
      encode: (position) => this.positions.seal(accountId, BigInt.asUintN(64, BigInt(position.at.getTime())), position.id, position.id !== SYNC_END_ID),
      decode: (cursor) => {
        if (cursor === null || cursor === undefined) return undefined;
        let opened: { number: bigint; id: Uuid };
        try {
          opened = this.positions.open(accountId, cursor);
        } catch {
          // Not a stamp position: a cursor issued before, or none of this account's (refused there).
          return { formerCommitPosition: this.former.decode(accountId, cursor)! };
        }
        return keysetPosition(new Date(Number(BigInt.asIntN(64, opened.number))), opened.id);
      },
    };
  }
}
