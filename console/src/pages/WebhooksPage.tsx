import { useId, useState } from 'react';
import { ApiError, type WebhookEndpoint } from '../api.ts';
import { DataTable } from '../components/DataTable.tsx';
import { Loading } from '../components/Loading.tsx';
import { PageHeader } from '../components/PageHeader.tsx';
import { Time } from '../components/Time.tsx';
import { deliveryResult, durationText, eventTypesText } from '../domain.ts';
import { useLoad } from '../useLoad.ts';
import { CreateWebhookDialog, DeleteWebhookDialog, RotateSecretDialog } from './WebhookDialogs.tsx';
import { ErrorCallout } from '../components/ErrorCallout.tsx';
import { useConsoleApi } from '../session.tsx';

type OpenDialog = { kind: 'create' } | { kind: 'rotate'; endpoint: WebhookEndpoint } | { kind: 'delete'; endpoint: WebhookEndpoint } | undefined;

/** Settings → Webhooks (contract sections 5 and 6): the account's endpoints and their latest delivery attempts. */
export function WebhooksPage() {
  const consoleApi = useConsoleApi();
  const webhooks = useLoad(consoleApi.listWebhooks);
  const [dialog, setDialog] = useState<OpenDialog>();
  const [flash, setFlash] = useState<string>();
  const [actionError, setActionError] = useState<string>();
  const close = () => setDialog(undefined);
  const changed = (message: string) => {
    setActionError(undefined);
    setFlash(message);
    webhooks.reload();
  };

  const toggle = async (endpoint: WebhookEndpoint) => {
    const change = endpoint.status === 'ENABLED' ? 'disable' : 'enable';
    try {
      await consoleApi.changeWebhook(endpoint.id, change);
      changed(`Endpoint ${endpoint.url} ${change === 'disable' ? 'disabled' : 'enabled'}.`);
    } catch (failure) {
      setFlash(undefined);
      setActionError(failure instanceof ApiError ? failure.detail : 'Something went wrong. Try again.');
    }
  };

  const error = actionError ?? webhooks.error;
  return (
    <>
      <PageHeader title="Webhooks" eyebrow="Settings">
        <button type="button" className="button" onClick={() => webhooks.reload()}>
          Refresh
        </button>
        <button type="button" className="button button-primary" onClick={() => setDialog({ kind: 'create' })} disabled={webhooks.data === undefined}>
          Create endpoint
        </button>
      </PageHeader>
      <p className="lead">
        Each change in the account (an order filled, a strategy paused…) is POSTed to your endpoints, signed to the Standard
        Webhooks specification and retried with back-off until it gets a 2xx answer. The same events can be read with{' '}
        <code>listEvents</code>.
      </p>
      <div role="status" className="flash-region">
        {flash && <p className="callout callout-ok">{flash}</p>}
      </div>
      <ErrorCallout message={error} />
      {webhooks.data === undefined ? (
        !webhooks.error && <Loading label="Loading webhook endpoints" />
      ) : webhooks.data.endpoints.length === 0 ? (
        <div className="empty">
          <h2>No endpoints yet</h2>
          <p>Create an endpoint to have events pushed to your systems instead of polling for them.</p>
        </div>
      ) : (
        <div className="endpoints">
          {webhooks.data.endpoints.map((endpoint) => (
            <EndpointCard
              key={endpoint.id}
              endpoint={endpoint}
              onToggle={() => toggle(endpoint)}
              onRotate={() => setDialog({ kind: 'rotate', endpoint })}
              onDelete={() => setDialog({ kind: 'delete', endpoint })}
            />
          ))}
        </div>
      )}

      {dialog?.kind === 'create' && webhooks.data && (
        <CreateWebhookDialog eventTypes={webhooks.data.eventTypes} onClose={close} onCreated={(endpoint) => changed(`Endpoint ${endpoint.url} created.`)} />
      )}
      {dialog?.kind === 'rotate' && (
        <RotateSecretDialog endpoint={dialog.endpoint} onClose={close} onRotated={(endpoint) => changed(`Signing secret of ${endpoint.url} rotated.`)} />
      )}
      {dialog?.kind === 'delete' && (
        <DeleteWebhookDialog endpoint={dialog.endpoint} onClose={close} onDeleted={(endpoint) => changed(`Endpoint ${endpoint.url} deleted.`)} />
      )}
    </>
  );
}

function EndpointCard({ endpoint, onToggle, onRotate, onDelete }: { endpoint: WebhookEndpoint; onToggle(): void; onRotate(): void; onDelete(): void }) {
  const headingId = useId();
  const enabled = endpoint.status === 'ENABLED';
  return (
    <section className="card endpoint" aria-labelledby={headingId}>
      <div className="endpoint-header">
        <div className="endpoint-title">
          <h2 id={headingId} className="endpoint-url">
            {endpoint.url}
          </h2>
          <span className={`badge badge-${enabled ? 'ok' : 'muted'}`}>{enabled ? 'Enabled' : 'Disabled'}</span>
        </div>
        {/* Every card has these buttons; the heading (the URL) says which endpoint they act on. */}
        <div className="endpoint-actions">
          <button type="button" className="button button-small" aria-describedby={headingId} onClick={onRotate}>
            Rotate secret
          </button>
          <button type="button" className="button button-small" aria-describedby={headingId} onClick={onToggle}>
            {enabled ? 'Disable' : 'Enable'}
          </button>
          <button type="button" className="button button-small button-danger-quiet" aria-describedby={headingId} onClick={onDelete}>
            Delete
          </button>
        </div>
      </div>
      <dl className="endpoint-facts">
        <div>
          <dt>Events</dt>
          <dd>{eventTypesText(endpoint.eventTypes)}</dd>
        </div>
        {endpoint.description && (
          <div>
            <dt>Description</dt>
            <dd>{endpoint.description}</dd>
          </div>
        )}
        <div>
          <dt>Created</dt>
          <dd>
            <Time iso={endpoint.createdAt} />
          </dd>
        </div>
        {endpoint.disabledReason && (
          <div>
            <dt>Disabled because</dt>
            <dd>{endpoint.disabledReason}</dd>
          </div>
        )}
      </dl>
      <h3 className="endpoint-subhead">Recent deliveries</h3>
      {endpoint.deliveries.length === 0 ? (
        <p className="muted">No deliveries yet. Events that occur from now on are sent here.</p>
      ) : (
        <DataTable label={`Recent deliveries to ${endpoint.url}`} columns={['Time', 'Event', 'Attempt', 'Result', 'Duration']}>
          {endpoint.deliveries.map((delivery) => (
            <tr key={delivery.id} role="row">
              <th scope="row" role="rowheader" className="nowrap">
                <Time iso={delivery.attemptedAt} as="seconds" />
              </th>
              <td role="cell" data-label="Event">
                <code>{delivery.eventType ?? delivery.eventId}</code>
              </td>
              <td role="cell" data-label="Attempt">
                {delivery.attempt}
              </td>
              <td role="cell" data-label="Result">
                <span className={`badge badge-${delivery.succeeded ? 'ok' : 'danger'}`}>{deliveryResult(delivery)}</span>
              </td>
              <td role="cell" data-label="Duration" className="nowrap">
                {durationText(delivery.durationMs)}
              </td>
            </tr>
          ))}
        </DataTable>
      )}
    </section>
  );
}
