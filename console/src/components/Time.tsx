import { formatDate, formatDateTime, formatRelative } from '../domain.ts';

/**
 * A moment as people read it: a date, a date and time, or how long ago or ahead; the exact UTC time
 * on hover and for machines.
 */
export function Time({ iso, as = 'datetime', empty = '—' }: { iso: string | null; as?: 'date' | 'datetime' | 'relative'; empty?: string }) {
  if (!iso) return <span className="muted">{empty}</span>;
  const text = as === 'date' ? formatDate(iso) : as === 'relative' ? formatRelative(iso, Date.now()) : formatDateTime(iso);
  return (
    <time dateTime={iso} title={iso}>
      {text}
    </time>
  );
}
