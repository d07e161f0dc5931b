import { useState, type FormEvent } from 'react';
import { ApiError, consoleApi, type GraceChoice, type WebhookEndpoint } from '../api.ts';
import { ConfirmDialog, failureText } from '../components/ConfirmDialog.tsx';
import { closeDialogOf, Dialog } from '../components/Dialog.tsx';
import { Field } from '../components/Field.tsx';
import { NewKeyReveal } from '../components/NewKeyReveal.tsx';
import { createWebhookRequest, DEFAULT_GRACE, formatDateTime, SECRET_GRACE_CHOICES } from '../domain.ts';

/** The Webhooks page's dialogs: create and rotate (each ending with the signing secret shown once) and delete. */

const SECRET_WARNING = 'Copy it now and keep it where your receiver verifies signatures. If it is lost, rotate the secret to get a new one.';

export function CreateWebhookDialog({ eventTypes, onClose, onCreated }: { eventTypes: string[]; onClose(): void; onCreated(endpoint: WebhookEndpoint): void }) {
  const [url, setUrl] = useState('');
  const [chosen, setChosen] = useState<string[]>([]);
  const [description, setDescription] = useState('');
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [formError, setFormError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const [created, setCreated] = useState<{ endpoint: WebhookEndpoint; signingSecret: string }>();

  const toggle = (type: string, on: boolean) => setChosen((current) => (on ? [...current, type] : current.filter((other) => other !== type)));

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const checked = createWebhookRequest({ url, eventTypes: eventTypes.filter((type) => chosen.includes(type)), description });
    setFormError(undefined);
    if (!checked.ok) {
      setErrors({ [checked.field]: checked.message });
      return;
    }
    setErrors({});
    setBusy(true);
    try {
      const result = await consoleApi.createWebhook(checked.value);
      setCreated(result);
      onCreated(result.endpoint);
    } catch (failure) {
      const field = failure instanceof ApiError ? failure.field : undefined;
      if (field && ['url', 'description'].includes(field)) setErrors({ [field]: failureText(failure) });
      else setFormError(failureText(failure));
    } finally {
      setBusy(false);
    }
  };

  if (created) {
    return (
      <Dialog title="Endpoint created" onClose={onClose} wide>
        <NewKeyReveal apiKey={created.signingSecret} label="Signing secret" notAgain="This secret will not be shown again." warning={SECRET_WARNING}>
          Events are now sent to {created.endpoint.url}, signed with this secret (Standard Webhooks).
        </NewKeyReveal>
      </Dialog>
    );
  }

  return (
    <Dialog title="Create endpoint" onClose={onClose} wide>
      {formError && (
        <p className="callout callout-danger" role="alert">
          {formError}
        </p>
      )}
      <form onSubmit={submit} noValidate>
        <Field label="URL" hint="Where events are POSTed. https:// only in production; private and loopback addresses are refused there." error={errors.url}>
          {(props) => (
            <input {...props} type="url" inputMode="url" autoComplete="off" spellCheck={false} placeholder="https://example.com/webhooks" value={url} onChange={(event) => setUrl(event.target.value)} />
          )}
        </Field>
        <fieldset className="field choices" aria-describedby="webhook-types-hint">
          <legend>Event types</legend>
          <p className="hint" id="webhook-types-hint">
            Leave all unchecked to receive every event type, including types added later.
          </p>
          <div className="choice-grid">
            {eventTypes.map((type) => (
              <label className="choice" key={type}>
                <input type="checkbox" checked={chosen.includes(type)} onChange={(event) => toggle(type, event.target.checked)} />
                {/* A long type breaks after its dot, not inside a word. */}
                <code>
                  {type.split('.')[0]}.<wbr />
                  {type.split('.').slice(1).join('.')}
                </code>
              </label>
            ))}
          </div>
        </fieldset>
        <Field label="Description" hint="Optional: what receives these events." error={errors.description}>
          {(props) => <input {...props} type="text" autoComplete="off" maxLength={500} value={description} onChange={(event) => setDescription(event.target.value)} />}
        </Field>
        <div className="dialog-actions">
          <button type="button" className="button" onClick={(event) => closeDialogOf(event.currentTarget)}>
            Cancel
          </button>
          <button type="submit" className="button button-primary" disabled={busy}>
            Create endpoint
          </button>
        </div>
      </form>
    </Dialog>
  );
}

export function RotateSecretDialog({ endpoint, onClose, onRotated }: { endpoint: WebhookEndpoint; onClose(): void; onRotated(endpoint: WebhookEndpoint): void }) {
  const [grace, setGrace] = useState<GraceChoice>(DEFAULT_GRACE);
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const [rotated, setRotated] = useState<{ signingSecret: string; until: string | null }>();

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    const graceMs = { now: 0, '1h': 3_600_000, '24h': 86_400_000, '7d': 604_800_000 }[grace];
    try {
      const result = await consoleApi.rotateWebhookSecret(endpoint.id, grace);
      setRotated({ signingSecret: result.signingSecret, until: graceMs > 0 ? new Date(Date.now() + graceMs).toISOString() : null });
      onRotated(result.endpoint);
    } catch (failure) {
      setError(failureText(failure));
    } finally {
      setBusy(false);
    }
  };

  if (rotated) {
    return (
      <Dialog title="Secret rotated" onClose={onClose} wide>
        <NewKeyReveal apiKey={rotated.signingSecret} label="New signing secret" notAgain="This secret will not be shown again." warning={SECRET_WARNING}>
          {rotated.until
            ? `Webhooks are signed with both secrets until about ${formatDateTime(rotated.until)}. Give the new one to your receiver before then.`
            : 'Webhooks are signed with the new secret only, from now on.'}
        </NewKeyReveal>
      </Dialog>
    );
  }

  return (
    <Dialog title="Rotate signing secret" onClose={onClose}>
      <p>
        A new secret replaces the one that signs webhooks to <code className="break">{endpoint.url}</code>. During the grace period
        both sign each webhook, so your receiver can switch without missing one.
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
              {SECRET_GRACE_CHOICES.map((choice) => (
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
            Rotate secret
          </button>
        </div>
      </form>
    </Dialog>
  );
}

export function DeleteWebhookDialog({ endpoint, onClose, onDeleted }: { endpoint: WebhookEndpoint; onClose(): void; onDeleted(endpoint: WebhookEndpoint): void }) {
  return (
    <ConfirmDialog
      title="Delete this endpoint?"
      confirmLabel="Delete endpoint"
      onClose={onClose}
      onConfirm={async () => onDeleted((await consoleApi.changeWebhook(endpoint.id, 'delete')).endpoint)}
    >
      No more events will be sent to <code className="break">{endpoint.url}</code>, pending retries are dropped and its delivery
      history is deleted. This cannot be undone; to pause deliveries instead, disable it.
    </ConfirmDialog>
  );
}
