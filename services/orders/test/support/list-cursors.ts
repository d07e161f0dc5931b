import { SealedKeysetCursors } from '@ots/shared/sealed-cursors';
import { SUBMITTED_AT_DESC, type OrderListCursors } from '../../src/domain.ts';
import { SealedSyncCursors } from '../../src/sync-cursors.ts';

const secret = Buffer.from('the test secret, long enough to seal', 'utf8');
const sync = new SealedSyncCursors(secret, 'test');
const newestFirst = new SealedKeysetCursors(secret, { tag: SUBMITTED_AT_DESC, keyInfo: 'test' });

/** The lists' cursors of an account, sealed as the service seals them but under a test secret. */
export function listCursorsOf(accountId: string): OrderListCursors {
  return { sync: sync.forAccount(accountId), newestFirst: newestFirst.forAccount(accountId) };
}
