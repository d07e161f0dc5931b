import { formatDate, formatDateTime, formatDateTimeWithSeconds, formatRelative } from '../domain.ts';

/**
 * A moment as people read it: a date, a date and time (with seconds where they matter), or how long
 * ago or ahead; the exact UTC time on hover and for machines.
 */
const FORMATS = {
  date: formatDate,
  datetime: formatDateTime,
  seconds: formatDateTimeWithSeconds,
  relative: (iso: string) => formatRelative(iso, Date.now()),
};

export function Time({ iso, as = 'datetime', empty = '—' }: { iso: string | null; as?: keyof typeof FORMATS; empty?: string }) {
  if (!iso) return <span className="muted">{empty}</span>;
  const text = FORMATS[as](iso);
  return (
    <time dateTime={iso} title={iso}>
      {text}
    </time>
  );
}
