import { useState, type FormEvent } from 'react';
import { ApiError, consoleApi, type ApiKey, type ExpiryChoice, type GraceChoice } from '../api.ts';
import { ConfirmDialog, failureText } from '../components/ConfirmDialog.tsx';
import { closeDialogOf, Dialog } from '../components/Dialog.tsx';
import { Field } from '../components/Field.tsx';
import { NewKeyReveal } from '../components/NewKeyReveal.tsx';
import { createKeyRequest, DEFAULT_GRACE, earliestExpiryDate, EXPIRY_CHOICES, formatDateTime, GRACE_CHOICES, keyName } from '../domain.ts';

/** The API Keys page's dialogs: create, roll (each ending with the new key shown once) and revoke. */

export function CreateKeyDialog({ onClose, onCreated }: { onClose(): void; onCreated(key: ApiKey): void }) {
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

export function RollKeyDialog({ apiKey, onClose, onRolled }: { apiKey: ApiKey; onClose(): void; onRolled(key: ApiKey): void }) {
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

export function RevokeKeyDialog({ apiKey, onClose, onRevoked }: { apiKey: ApiKey; onClose(): void; onRevoked(key: ApiKey): void }) {
  return (
    <ConfirmDialog
      title="Revoke this key?"
      confirmLabel="Revoke key"
      onClose={onClose}
      onConfirm={async () => onRevoked((await consoleApi.revokeKey(apiKey.id)).key)}
    >
      Requests made with <code>{apiKey.displayPrefix}</code>
      {apiKey.label && ` (“${apiKey.label}”)`} will be refused within a second. This cannot be undone.
    </ConfirmDialog>
  );
}
