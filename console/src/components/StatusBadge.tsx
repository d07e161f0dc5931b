import type { KeyStatus } from '../api.ts';
import { STATUS_TONE } from '../domain.ts';

export function StatusBadge({ status }: { status: KeyStatus }) {
  return <span className={`badge badge-${STATUS_TONE[status]}`}>{status}</span>;
}
