import { useState } from 'react';
import type { GraceChoice, WebhookEndpoint } from '../api.ts';
import { ConfirmDialog } from '../components/ConfirmDialog.tsx';
import { Dialog, FormActions } from '../components/Dialog.tsx';
import { Field } from '../components/Field.tsx';
import { GraceDialog } from '../components/GraceDialog.tsx';
import { useFormSubmission } from '../components/useFormSubmission.ts';
import { NewKeyReveal } from '../components/NewKeyReveal.tsx';
import { createWebhookRequest, formatDateTime, SECRET_GRACE_CHOICES } from '../domain.ts';
import { ErrorCallout } from '../components/ErrorCallout.tsx';
import { useConsoleApi } from '../session.tsx';

/** The Webhooks page's dialogs: create and rotate (each ending with the signing secret shown once) and delete. */

const SECRET_WARNING = 'Copy it now and keep it where your receiver verifies signatures. If it is lost, rotate the secret to get a new one.';

export function CreateWebhookDialog({ eventTypes, onClose, onCreated }: { eventTypes: string[]; onClose(): void; onCreated(endpoint: WebhookEndpoint): void }) {
  const consoleApi = useConsoleApi();
  const [url, setUrl] = useState('');
  const [chosen, setChosen] = useState<string[]>([]);
  const [description, setDescription] = useState('');
  const [created, setCreated] = useState<{ endpoint: WebhookEndpoint; signingSecret: string }>();
  const { errors, formError, busy, submit } = useFormSubmission(
    ['url', 'description'],
    () => createWebhookRequest({ url, eventTypes: eventTypes.filter((type) => chosen.includes(type)), description }),
    async (request) => {
      const result = await consoleApi.createWebhook(request);
      setCreated(result);
      onCreated(result.endpoint);
    },
  );

  const toggle = (type: string, on: boolean) => setChosen((current) => (on ? [...current, type] : current.filter((other) => other !== type)));

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
    <Dialog title="Create endpoint" onClose={onClose} wide busy={busy}>
      <ErrorCallout message={formError} />
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
        <FormActions submitLabel="Create endpoint" busy={busy} />
      </form>
    </Dialog>
  );
}

const GRACE_MS: Record<GraceChoice, number> = { now: 0, '1h': 3_600_000, '24h': 86_400_000, '7d': 604_800_000 };

export function RotateSecretDialog({ endpoint, onClose, onRotated }: { endpoint: WebhookEndpoint; onClose(): void; onRotated(endpoint: WebhookEndpoint): void }) {
  const consoleApi = useConsoleApi();
  return (
    <GraceDialog
      title="Rotate signing secret"
      choices={SECRET_GRACE_CHOICES}
      submitLabel="Rotate secret"
      onClose={onClose}
      replace={async (grace) => {
        const requestedAt = Date.now();
        const result = await consoleApi.rotateWebhookSecret(endpoint.id, grace);
        onRotated(result.endpoint);
        return { signingSecret: result.signingSecret, until: GRACE_MS[grace] > 0 ? new Date(requestedAt + GRACE_MS[grace]).toISOString() : null };
      }}
      reveal={(rotated) => (
        <Dialog title="Secret rotated" onClose={onClose} wide>
          <NewKeyReveal apiKey={rotated.signingSecret} label="New signing secret" notAgain="This secret will not be shown again." warning={SECRET_WARNING}>
            {rotated.until
              ? `Webhooks are signed with both secrets until about ${formatDateTime(rotated.until)}. Give the new one to your receiver before then.`
              : 'Webhooks are signed with the new secret only, from now on.'}
          </NewKeyReveal>
        </Dialog>
      )}
    >
      A new secret replaces the one that signs webhooks to <code className="break">{endpoint.url}</code>. During the grace period both
      sign each webhook, so your receiver can switch without missing one; with &ldquo;Now&rdquo; the old one stops signing at once.
    </GraceDialog>
  );
}

export function DeleteWebhookDialog({ endpoint, onClose, onDeleted }: { endpoint: WebhookEndpoint; onClose(): void; onDeleted(endpoint: WebhookEndpoint): void }) {
  const consoleApi = useConsoleApi();
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
