import { useCallback, useEffect, useState } from 'react';
import { ApiError, type LogEvent } from '../api.ts';
import { DataTable } from '../components/DataTable.tsx';
import { Loading } from '../components/Loading.tsx';
import { PageHeader } from '../components/PageHeader.tsx';
import { Time } from '../components/Time.tsx';
import { eventDetailText, eventLabel } from '../domain.ts';
import { ErrorCallout } from '../components/ErrorCallout.tsx';
import { useConsoleApi } from '../session.tsx';

export function SecurityLogPage() {
  const consoleApi = useConsoleApi();
  const [events, setEvents] = useState<LogEvent[]>();
  const [nextCursor, setNextCursor] = useState<string | null>(null);
  const [error, setError] = useState<string>();
  // The first page loads as the page opens.
  const [busy, setBusy] = useState(true);

  const load = useCallback(
    (after?: string) =>
      consoleApi
        .securityLog(after)
        .then(
          (page) => {
            setEvents((shown) => (after ? [...(shown ?? []), ...page.events] : page.events));
            setNextCursor(page.nextCursor);
            setError(undefined);
          },
          (failure) => setError(failure instanceof ApiError ? failure.detail : 'Loading failed. Try again.'),
        )
        .finally(() => setBusy(false)),
    [consoleApi],
  );

  useEffect(() => {
    void load();
  }, [load]);

  return (
    <>
      <PageHeader title="Security log" eyebrow="Settings" />
      <p className="lead">
        Every key created, changed, rolled, revoked and refused from an address it does not allow, every sign-in and password change of this account, newest first. Changes
        made by an operator with the CLI show no owner.
      </p>
      <ErrorCallout message={error} />
      {events === undefined ? (
        !error && <Loading label="Loading the security log" />
      ) : events.length === 0 ? (
        <div className="empty">
          <h2>Nothing yet</h2>
          <p>Events appear here as keys change and owners sign in.</p>
        </div>
      ) : (
        <>
          <DataTable label="Security log" columns={['Event', 'Time', 'Owner', 'Client address', 'User agent']}>
            {events.map((event) => (
              <tr key={event.id} role="row">
                <th scope="row" role="rowheader">
                  <span className={`event event-${event.type.replace('.', '-')}`}>{eventLabel(event.type)}</span>
                  {event.keyDisplayPrefix && <code className="subtle nowrap">{event.keyDisplayPrefix}</code>}
                  <EventDetail text={eventDetailText(event)} />
                </th>
                <td role="cell" data-label="Time" className="nowrap">
                  <Time iso={event.occurredAt} />
                </td>
                <td role="cell" data-label="Owner">{event.ownerEmail ?? <span className="muted">—</span>}</td>
                <td role="cell" data-label="Client address" className="nowrap">{event.clientAddress ?? <span className="muted">—</span>}</td>
                <td role="cell" data-label="User agent" className="user-agent" title={event.userAgent ?? undefined}>
                  {event.userAgent ?? <span className="muted">—</span>}
                </td>
              </tr>
            ))}
          </DataTable>
          {nextCursor && (
            <p className="more">
              <button
                type="button"
                className="button"
                disabled={busy}
                onClick={() => {
                  setBusy(true);
                  void load(nextCursor);
                }}
              >
                Show older events
              </button>
            </p>
          )}
        </>
      )}
    </>
  );
}

function EventDetail({ text }: { text: string | undefined }) {
  return text ? <span className="event-detail">{text}</span> : null;
}
