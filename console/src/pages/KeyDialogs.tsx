import { useState } from 'react';
import { consoleApi, type ApiKey, type ExpiryChoice } from '../api.ts';
import { ConfirmDialog } from '../components/ConfirmDialog.tsx';
import { Dialog, FormActions } from '../components/Dialog.tsx';
import { Field } from '../components/Field.tsx';
import { GraceDialog } from '../components/GraceDialog.tsx';
import { useFormSubmission } from '../components/useFormSubmission.ts';
import { NewKeyReveal } from '../components/NewKeyReveal.tsx';
import { createKeyRequest, earliestExpiryDate, EXPIRY_CHOICES, formatDateTime, GRACE_CHOICES, keyName } from '../domain.ts';
import { ErrorCallout } from '../components/ErrorCallout.tsx';

/** The API Keys page's dialogs: create, roll (each ending with the new key shown once) and revoke. */

export function CreateKeyDialog({ onClose, onCreated }: { onClose(): void; onCreated(key: ApiKey): void }) {
  const [label, setLabel] = useState('');
  const [expires, setExpires] = useState<ExpiryChoice>('never');
  const [expiresOn, setExpiresOn] = useState('');
  const [created, setCreated] = useState<{ key: ApiKey; apiKey: string }>();
  const { errors, formError, busy, submit } = useFormSubmission(
    ['label', 'expires', 'expiresOn'],
    () => createKeyRequest({ label, expires, expiresOn }, new Date()),
    async (request) => {
      const result = await consoleApi.createKey(request);
      setCreated(result);
      onCreated(result.key);
    },
  );

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
      <ErrorCallout message={formError} />
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
        <FormActions submitLabel="Create" busy={busy} />
      </form>
    </Dialog>
  );
}

export function RollKeyDialog({ apiKey, onClose, onRolled }: { apiKey: ApiKey; onClose(): void; onRolled(key: ApiKey): void }) {
  return (
    <GraceDialog
      title={`Roll key ${keyName(apiKey)}`}
      choices={GRACE_CHOICES}
      submitLabel="Roll key"
      onClose={onClose}
      replace={async (grace) => {
        const rolled = await consoleApi.rollKey(apiKey.id, grace);
        onRolled(rolled.key);
        return rolled;
      }}
      reveal={(rolled) => {
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
      }}
    >
      Rolling makes a new key to replace <code>{apiKey.displayPrefix}</code>. The old key keeps working for the grace period, so you
      can deploy the new one first.
    </GraceDialog>
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
