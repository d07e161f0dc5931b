import { useState } from 'react';
import type { ApiKey, ExpiryChoice } from '../api.ts';
import { ConfirmDialog } from '../components/ConfirmDialog.tsx';
import { Dialog, FormActions } from '../components/Dialog.tsx';
import { ChoiceSelect, Field } from '../components/Field.tsx';
import { GraceDialog } from '../components/GraceDialog.tsx';
import { useFormSubmission } from '../components/useFormSubmission.ts';
import { NewKeyReveal } from '../components/NewKeyReveal.tsx';
import {
  ALL_SCOPES,
  createKeyRequest,
  earliestExpiryDate,
  EXPIRY_CHOICES,
  formatDateTime,
  GRACE_CHOICES,
  keyName,
  permissionsRequest,
  SCOPE_CHOICES,
} from '../domain.ts';
import { ErrorCallout } from '../components/ErrorCallout.tsx';
import { useConsoleApi } from '../session.tsx';

/** The API Keys page's dialogs: create, roll (each ending with the new key shown once), edit and revoke. */

/**
 * What a key may do and from where: a checkbox per scope and the allowed addresses, one per line.
 * The create form and "Edit" show the same controls, so narrowing a key is as easy as creating one.
 */
function PermissionFields({
  scopes,
  onScopes,
  allowedCidrs,
  onAllowedCidrs,
  errors,
}: {
  scopes: string[];
  onScopes(scopes: string[]): void;
  allowedCidrs: string;
  onAllowedCidrs(text: string): void;
  errors: Record<string, string>;
}) {
  return (
    <>
      <fieldset className={`field choices${errors.scopes ? ' field-invalid' : ''}`} aria-describedby={errors.scopes ? 'scopes-error' : undefined}>
        <legend>Permissions</legend>
        {SCOPE_CHOICES.map((choice) => (
          <label key={choice.scope} className="choice">
            <input
              type="checkbox"
              name="scopes"
              value={choice.scope}
              checked={scopes.includes(choice.scope)}
              onChange={(event) => onScopes(event.target.checked ? [...scopes, choice.scope] : scopes.filter((scope) => scope !== choice.scope))}
            />
            {choice.label}
          </label>
        ))}
        <p className="hint">Read lets the key list and fetch; each of the others lets it change what it names. Give a key only what its job needs.</p>
        {errors.scopes && (
          <p className="field-error" id="scopes-error">
            {errors.scopes}
          </p>
        )}
      </fieldset>
      <Field label="Allowed IP addresses" hint="One address or CIDR per line, IPv4 or IPv6 (e.g. 203.0.113.0/24). Leave empty to allow any address." error={errors.allowedCidrs}>
        {(props) => <textarea {...props} rows={3} spellCheck={false} value={allowedCidrs} onChange={(event) => onAllowedCidrs(event.target.value)} />}
      </Field>
    </>
  );
}

export function CreateKeyDialog({ onClose, onCreated }: { onClose(): void; onCreated(key: ApiKey): void }) {
  const consoleApi = useConsoleApi();
  const [label, setLabel] = useState('');
  const [expires, setExpires] = useState<ExpiryChoice>('never');
  const [expiresOn, setExpiresOn] = useState('');
  const [scopes, setScopes] = useState<string[]>(ALL_SCOPES);
  const [allowedCidrs, setAllowedCidrs] = useState('');
  const [created, setCreated] = useState<{ key: ApiKey; apiKey: string }>();
  const { errors, formError, busy, submit } = useFormSubmission(
    ['label', 'expires', 'expiresOn', 'scopes', 'allowedCidrs'],
    () => createKeyRequest({ label, expires, expiresOn, scopes, allowedCidrs }, new Date()),
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
    <Dialog title="Create API key" onClose={onClose} busy={busy}>
      <ErrorCallout message={formError} />
      <form onSubmit={submit} noValidate>
        <Field label="Label" hint="Name the bot, job or person that will use the key." error={errors.label}>
          {(props) => <input {...props} type="text" autoComplete="off" value={label} onChange={(event) => setLabel(event.target.value)} />}
        </Field>
        <Field label="Expires" error={errors.expires}>
          {(props) => <ChoiceSelect control={props} choices={EXPIRY_CHOICES} value={expires} onChange={setExpires} />}
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
        <PermissionFields scopes={scopes} onScopes={setScopes} allowedCidrs={allowedCidrs} onAllowedCidrs={setAllowedCidrs} errors={errors} />
        <FormActions submitLabel="Create" busy={busy} />
      </form>
    </Dialog>
  );
}

export function EditKeyDialog({ apiKey, onClose, onSaved }: { apiKey: ApiKey; onClose(): void; onSaved(key: ApiKey): void }) {
  const consoleApi = useConsoleApi();
  const [scopes, setScopes] = useState<string[]>(apiKey.scopes);
  const [allowedCidrs, setAllowedCidrs] = useState(apiKey.allowedCidrs.join('\n'));
  const { errors, formError, busy, submit } = useFormSubmission(
    ['scopes', 'allowedCidrs'],
    () => permissionsRequest({ scopes, allowedCidrs }),
    async (request) => {
      onSaved((await consoleApi.updateKey(apiKey.id, request)).key);
      onClose();
    },
  );
  return (
    <Dialog title={`Edit key ${keyName(apiKey)}`} onClose={onClose} busy={busy}>
      <ErrorCallout message={formError} />
      <p>
        Changes apply to <code>{apiKey.displayPrefix}</code> everywhere within a second; requests it can no longer make are refused.
      </p>
      <form onSubmit={submit} noValidate>
        <PermissionFields scopes={scopes} onScopes={setScopes} allowedCidrs={allowedCidrs} onAllowedCidrs={setAllowedCidrs} errors={errors} />
        <FormActions submitLabel="Save" busy={busy} />
      </form>
    </Dialog>
  );
}

export function RollKeyDialog({ apiKey, onClose, onRolled }: { apiKey: ApiKey; onClose(): void; onRolled(key: ApiKey): void }) {
  const consoleApi = useConsoleApi();
  return (
    <GraceDialog
      title={`Roll key ${keyName(apiKey)}`}
      choices={GRACE_CHOICES}
      submitLabel="Roll key"
      onClose={onClose}
      replace={async (grace) => {
        const rolled = await consoleApi.rollKey(apiKey.id, grace);
        onRolled(rolled.key);
        // Judged when the answer arrives, so that rendering reads no clock.
        const until = rolled.previousKey.expiresAt;
        const previousStillWorks = until !== null && new Date(until).getTime() > Date.now() && rolled.previousKey.status !== 'Revoked';
        return { ...rolled, previousWorksUntil: previousStillWorks ? until : null };
      }}
      reveal={(rolled) => (
        <Dialog title="Key rolled" onClose={onClose} wide>
          <NewKeyReveal apiKey={rolled.apiKey}>
            {rolled.previousWorksUntil !== null
              ? `The previous key ${rolled.previousKey.displayPrefix} keeps working until ${formatDateTime(rolled.previousWorksUntil)}. Deploy the new key before then.`
              : `The previous key ${rolled.previousKey.displayPrefix} no longer works.`}
          </NewKeyReveal>
        </Dialog>
      )}
    >
      Rolling makes a new key to replace <code>{apiKey.displayPrefix}</code>. The old key keeps working for the grace period, so you
      can deploy the new one first; with &ldquo;Now&rdquo; it stops working at once.
    </GraceDialog>
  );
}

export function RevokeKeyDialog({ apiKey, onClose, onRevoked }: { apiKey: ApiKey; onClose(): void; onRevoked(key: ApiKey): void }) {
  const consoleApi = useConsoleApi();
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
