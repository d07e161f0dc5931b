import { useId, useState, type FormEvent } from 'react';
import { ApiError, consoleApi, type ApiKey, type ExpiryChoice, type GraceChoice } from '../api.ts';
import { DataTable } from '../components/DataTable.tsx';
import { closeDialogOf, Dialog } from '../components/Dialog.tsx';
import { Field } from '../components/Field.tsx';
import { Loading } from '../components/Loading.tsx';
import { NewKeyReveal } from '../components/NewKeyReveal.tsx';
import { PageHeader } from '../components/PageHeader.tsx';
import { StatusBadge } from '../components/StatusBadge.tsx';
import { Time } from '../components/Time.tsx';
import {
  canRevoke,
  canRoll,
  createKeyRequest,
  DEFAULT_GRACE,
  earliestExpiryDate,
  EXPIRY_CHOICES,
  formatDateTime,
  GRACE_CHOICES,
  keyName,
} from '../domain.ts';
import { useSignedIn } from '../session.tsx';
import { useLoad } from '../useLoad.ts';

type OpenDialog = { kind: 'create' } | { kind: 'roll'; key: ApiKey } | { kind: 'revoke'; key: ApiKey } | undefined;

export function ApiKeysPage() {
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
      {keys.error && (
        <p className="callout callout-danger" role="alert">
          {keys.error}
        </p>
      )}
      {keys.data === undefined ? (
        !keys.error && <Loading label="Loading keys" />
      ) : keys.data.keys.length === 0 ? (
        <div className="empty">
          <h2>No API keys yet</h2>
          <p>Create a key for each bot or job, so that you can roll or revoke one without touching the others.</p>
        </div>
      ) : (
        <KeyTable keys={keys.data.keys} onRoll={(key) => setDialog({ kind: 'roll', key })} onRevoke={(key) => setDialog({ kind: 'revoke', key })} />
      )}

      {dialog?.kind === 'create' && <CreateKeyDialog onClose={close} onCreated={(key) => changed(`Key ${keyName(key)} created.`)} />}
      {dialog?.kind === 'roll' && (
        <RollKeyDialog apiKey={dialog.key} onClose={close} onRolled={(key) => changed(`Key ${keyName(dialog.key)} rolled: ${key.displayPrefix} replaces ${dialog.key.displayPrefix}.`)} />
      )}
      {dialog?.kind === 'revoke' && (
        <RevokeKeyDialog apiKey={dialog.key} onClose={close} onRevoked={(key) => changed(`Key ${key.displayPrefix} revoked.`)} />
      )}
    </>
  );
}

function KeyTable({ keys, onRoll, onRevoke }: { keys: ApiKey[]; onRoll(key: ApiKey): void; onRevoke(key: ApiKey): void }) {
  const idPrefix = useId();
  return (
    <DataTable
      label="API keys"
      columns={['Label', 'Key', 'Environment', 'Created', 'Last used', 'Expires', 'Status', <span className="visually-hidden">Actions</span>]}
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
              <code className="nowrap">{key.displayPrefix}</code>
            </td>
            <td role="cell" data-label="Environment">
              {key.environment === 'LIVE' ? 'Live' : 'Sandbox'}
            </td>
            <td role="cell" data-label="Created" className="nowrap">
              <Time iso={key.createdAt} as="date" />
            </td>
            <td role="cell" data-label="Last used" className="nowrap">
              <Time iso={key.lastUsedAt} as="relative" empty="Never" />
            </td>
            <td role="cell" data-label="Expires" className="nowrap">
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

function failureText(failure: unknown): string {
  return failure instanceof ApiError ? failure.detail : 'Something went wrong. Try again.';
}

function CreateKeyDialog({ onClose, onCreated }: { onClose(): void; onCreated(key: ApiKey): void }) {
  const [label, setLabel] = useState('');
  const [expires, setExpires] = useState<ExpiryChoice>('never');
  const [expiresOn, setExpiresOn] = useState('');
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [formError, setFormError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const [created, setCreated] = useState<{ key: ApiKey; apiKey: string }>();

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const checked = createKeyRequest({ label, expires, expiresOn }, new Date());
    setFormError(undefined);
    if (!checked.ok) {
      setErrors({ [checked.field]: checked.message });
      return;
    }
    setErrors({});
    setBusy(true);
    try {
      const result = await consoleApi.createKey(checked.value);
      setCreated(result);
      onCreated(result.key);
    } catch (failure) {
      const field = failure instanceof ApiError ? failure.field : undefined;
      if (field && ['label', 'expires', 'expiresOn'].includes(field)) setErrors({ [field]: failureText(failure) });
      else setFormError(failureText(failure));
    } finally {
      setBusy(false);
    }
  };

  if (created) {
    return (
      <Dialog title="API key created" onClose={onClose} wide>
        <NewKeyReveal apiKey={created.apiKey}>
          Key {keyName(created.key)} is ready. It {created.key.expiresAt ? `expires ${formatDateTime(created.key.expiresAt)}` : 'never expires'}.
        </NewKeyReveal>
      </Dialog>
    );
  }

  return (
    <Dialog title="Create API key" onClose={onClose}>
      {formError && (
        <p className="callout callout-danger" role="alert">
          {formError}
        </p>
      )}
      <form onSubmit={submit} noValidate>
        <Field label="Label" hint="Name the bot, job or person that will use the key." error={errors.label}>
          {(props) => <input {...props} type="text" autoComplete="off" value={label} onChange={(event) => setLabel(event.target.value)} />}
        </Field>
        <Field label="Expires" error={errors.expires}>
          {(props) => (
            <select {...props} value={expires} onChange={(event) => setExpires(event.target.value as ExpiryChoice)}>
              {EXPIRY_CHOICES.map((choice) => (
                <option key={choice.value} value={choice.value}>
                  {choice.label}
                </option>
              ))}
            </select>
          )}
        </Field>
        {expires === 'date' && (
          <Field label="Expiry date" hint="The key works through the end of this day (UTC)." error={errors.expiresOn}>
            {(props) => (
              <input {...props} type="date" min={earliestExpiryDate(new Date())} value={expiresOn} onChange={(event) => setExpiresOn(event.target.value)} />
            )}
          </Field>
        )}
        <fieldset className="field choices">
          <legend>Environment</legend>
          <label className="choice">
            <input type="radio" name="environment" value="LIVE" checked readOnly />
            Live
          </label>
          <label className="choice choice-disabled">
            <input type="radio" name="environment" value="SANDBOX" disabled />
            Sandbox — coming soon
          </label>
          <p className="hint">Live keys start with svc_live_. Sandbox keys are not available yet.</p>
        </fieldset>
        <div className="dialog-actions">
          <button type="button" className="button" onClick={(event) => closeDialogOf(event.currentTarget)}>
            Cancel
          </button>
          <button type="submit" className="button button-primary" disabled={busy}>
            Create
          </button>
        </div>
      </form>
    </Dialog>
  );
}

function RollKeyDialog({ apiKey, onClose, onRolled }: { apiKey: ApiKey; onClose(): void; onRolled(key: ApiKey): void }) {
  const [grace, setGrace] = useState<GraceChoice>(DEFAULT_GRACE);
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const [rolled, setRolled] = useState<{ key: ApiKey; apiKey: string; previousKey: ApiKey }>();

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const result = await consoleApi.rollKey(apiKey.id, grace);
      setRolled(result);
      onRolled(result.key);
    } catch (failure) {
      setError(failureText(failure));
    } finally {
      setBusy(false);
    }
  };

  if (rolled) {
    const until = rolled.previousKey.expiresAt;
    const previousStillWorks = until !== null && new Date(until).getTime() > Date.now() && rolled.previousKey.status !== 'Revoked';
    return (
      <Dialog title="Key rolled" onClose={onClose} wide>
        <NewKeyReveal apiKey={rolled.apiKey}>
          {previousStillWorks
            ? `The previous key ${rolled.previousKey.displayPrefix} keeps working until ${formatDateTime(until)}. Deploy the new key before then.`
            : `The previous key ${rolled.previousKey.displayPrefix} no longer works.`}
        </NewKeyReveal>
      </Dialog>
    );
  }

  return (
    <Dialog title={`Roll key ${keyName(apiKey)}`} onClose={onClose}>
      <p>
        Rolling makes a new key to replace <code>{apiKey.displayPrefix}</code>. The old key keeps working for the grace
        period, so you can deploy the new one first.
      </p>
      {error && (
        <p className="callout callout-danger" role="alert">
          {error}
        </p>
      )}
      <form onSubmit={submit}>
        <Field label="Grace period">
          {(props) => (
            <select {...props} value={grace} onChange={(event) => setGrace(event.target.value as GraceChoice)}>
              {GRACE_CHOICES.map((choice) => (
                <option key={choice.value} value={choice.value}>
                  {choice.label}
                </option>
              ))}
            </select>
          )}
        </Field>
        <div className="dialog-actions">
          <button type="button" className="button" onClick={(event) => closeDialogOf(event.currentTarget)}>
            Cancel
          </button>
          <button type="submit" className="button button-primary" disabled={busy}>
            Roll key
          </button>
        </div>
      </form>
    </Dialog>
  );
}

function RevokeKeyDialog({ apiKey, onClose, onRevoked }: { apiKey: ApiKey; onClose(): void; onRevoked(key: ApiKey): void }) {
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);

  const revoke = async (button: HTMLButtonElement) => {
    setBusy(true);
    setError(undefined);
    try {
      const { key } = await consoleApi.revokeKey(apiKey.id);
      onRevoked(key);
      closeDialogOf(button);
    } catch (failure) {
      setError(failureText(failure));
      setBusy(false);
    }
  };

  return (
    <Dialog title="Revoke this key?" onClose={onClose}>
      <p>
        Requests made with <code>{apiKey.displayPrefix}</code>
        {apiKey.label && ` (“${apiKey.label}”)`} will be refused within a second. This cannot be undone.
      </p>
      {error && (
        <p className="callout callout-danger" role="alert">
          {error}
        </p>
      )}
      <div className="dialog-actions">
        <button type="button" className="button" data-autofocus onClick={(event) => closeDialogOf(event.currentTarget)}>
          Cancel
        </button>
        <button type="button" className="button button-danger" disabled={busy} onClick={(event) => revoke(event.currentTarget)}>
          Revoke key
        </button>
      </div>
    </Dialog>
  );
}
