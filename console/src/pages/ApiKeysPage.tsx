import { useId, useState } from 'react';
import type { ApiKey } from '../api.ts';
import { DataTable } from '../components/DataTable.tsx';
import { Loading } from '../components/Loading.tsx';
import { PageHeader } from '../components/PageHeader.tsx';
import { StatusBadge } from '../components/StatusBadge.tsx';
import { Time } from '../components/Time.tsx';
import { allowedFromText, canEdit, canRevoke, canRoll, keyName, permissionsText } from '../domain.ts';
import { useConsoleApi, useSignedIn } from '../session.tsx';
import { useLoad } from '../useLoad.ts';
import { CreateKeyDialog, EditKeyDialog, RevokeKeyDialog, RollKeyDialog } from './KeyDialogs.tsx';
import { ErrorCallout } from '../components/ErrorCallout.tsx';

type OpenDialog = { kind: 'create' } | { kind: 'edit'; key: ApiKey } | { kind: 'roll'; key: ApiKey } | { kind: 'revoke'; key: ApiKey } | undefined;

export function ApiKeysPage() {
  const consoleApi = useConsoleApi();
  const { account } = useSignedIn();
  const keys = useLoad(consoleApi.listKeys);
  const [dialog, setDialog] = useState<OpenDialog>();
  const [flash, setFlash] = useState<string>();
  const close = () => setDialog(undefined);
  const changed = (message: string) => {
    setFlash(message);
    keys.reload();
  };

  return (
    <>
      <PageHeader title="API Keys" eyebrow="Settings">
        <button type="button" className="button button-primary" onClick={() => setDialog({ kind: 'create' })}>
          Create API key
        </button>
      </PageHeader>
      <p className="lead">
        Your bots and jobs send a key in the <code>X-API-Key</code> header; everything they create belongs to{' '}
        {account.name}. Roll keys periodically, and at once if one may have leaked.
      </p>
      <div role="status" className="flash-region">
        {flash && <p className="callout callout-ok">{flash}</p>}
      </div>
      <ErrorCallout message={keys.error} />
      {keys.data === undefined ? (
        !keys.error && <Loading label="Loading keys" />
      ) : keys.data.keys.length === 0 ? (
        <div className="empty">
          <h2>No API keys yet</h2>
          <p>Create a key for each bot or job, so that you can roll or revoke one without touching the others.</p>
        </div>
      ) : (
        <KeyTable
          keys={keys.data.keys}
          onEdit={(key) => setDialog({ kind: 'edit', key })}
          onRoll={(key) => setDialog({ kind: 'roll', key })}
          onRevoke={(key) => setDialog({ kind: 'revoke', key })}
        />
      )}

      {dialog?.kind === 'create' && <CreateKeyDialog onClose={close} onCreated={(key) => changed(`Key ${keyName(key)} created.`)} />}
      {dialog?.kind === 'edit' && <EditKeyDialog apiKey={dialog.key} onClose={close} onSaved={(key) => changed(`Key ${key.displayPrefix} saved.`)} />}
      {dialog?.kind === 'roll' && (
        <RollKeyDialog apiKey={dialog.key} onClose={close} onRolled={(key) => changed(`Key ${keyName(dialog.key)} rolled: ${key.displayPrefix} replaces ${dialog.key.displayPrefix}.`)} />
      )}
      {dialog?.kind === 'revoke' && (
        <RevokeKeyDialog apiKey={dialog.key} onClose={close} onRevoked={(key) => changed(`Key ${key.displayPrefix} revoked.`)} />
      )}
    </>
  );
}

function KeyTable({ keys, onEdit, onRoll, onRevoke }: { keys: ApiKey[]; onEdit(key: ApiKey): void; onRoll(key: ApiKey): void; onRevoke(key: ApiKey): void }) {
  const idPrefix = useId();
  const prefixes = new Map(keys.map((key) => [key.id, key.displayPrefix]));
  return (
    <DataTable
      label="API keys"
      className="table-keys"
      columns={[
        'Label',
        'Key',
        'Permissions',
        'Allowed from',
        'Created',
        'Last used',
        'Expires',
        'Status',
        <span className="visually-hidden">Actions</span>,
      ]}
    >
      {keys.map((key) => {
        // The row's buttons are all named "Roll" and "Revoke"; the label describes which key they act on.
        const labelId = `${idPrefix}-${key.id}`;
        return (
          <tr key={key.id} role="row">
            <th scope="row" role="rowheader" id={labelId}>
              {key.label || <span className="muted">Unnamed</span>}
            </th>
            <td role="cell" data-label="Key">
              {/* One flex item in the phone card, however many notes it has. */}
              <span>
                <code className="nowrap">{key.displayPrefix}</code>{' '}
                {/* The environment rides along with the key rather than taking a column a laptop has no room for. */}
                <span className="badge badge-muted badge-small">{key.environment === 'LIVE' ? 'Live' : 'Sandbox'}</span>
                {/* After a roll two rows share a label: each says which key it replaces or is replaced by. */}
                {key.replacesKeyId && (
                  <span className="hint roll-chain">
                    Replaces <span className="nowrap">{prefixes.get(key.replacesKeyId) ?? 'an earlier key'}</span>
                  </span>
                )}
                {key.replacedByKeyId && (
                  <span className="hint roll-chain">
                    Replaced by <span className="nowrap">{prefixes.get(key.replacedByKeyId) ?? 'a newer key'}</span>
                  </span>
                )}
              </span>
            </td>
            <td role="cell" data-label="Permissions">
              {permissionsText(key.scopes)}
            </td>
            <td role="cell" data-label="Allowed from" className="cidrs">
              {allowedFromText(key.allowedCidrs)}
            </td>
            <td role="cell" data-label="Created" className="nowrap">
              <Time iso={key.createdAt} as="date" />
            </td>
            <td role="cell" data-label="Last used">
              <Time iso={key.lastUsedAt} as="relative" empty="Never" />
            </td>
            {/* "in 59 minutes" may wrap; a date stays whole. */}
            <td role="cell" data-label="Expires" className={key.status === 'Expiring' ? undefined : 'nowrap'}>
              {key.status === 'Revoked' ? (
                <span className="muted">—</span>
              ) : (
                <Time iso={key.expiresAt} as={key.status === 'Expiring' ? 'relative' : 'date'} empty="Never" />
              )}
            </td>
            <td role="cell" data-label="Status">
              <StatusBadge status={key.status} />
            </td>
            <td role="cell" className="row-actions">
              {canEdit(key) && (
                <button type="button" className="button button-small" aria-describedby={labelId} onClick={() => onEdit(key)}>
                  Edit
                </button>
              )}
              {canRoll(key) && (
                <button type="button" className="button button-small" aria-describedby={labelId} onClick={() => onRoll(key)}>
                  Roll
                </button>
              )}
              {canRevoke(key) && (
                <button type="button" className="button button-small button-danger-quiet" aria-describedby={labelId} onClick={() => onRevoke(key)}>
                  Revoke
                </button>
              )}
            </td>
          </tr>
        );
      })}
    </DataTable>
  );
}
