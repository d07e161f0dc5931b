import { useState, type FormEvent, type ReactNode } from 'react';
import type { GraceChoice } from '../api.ts';
import { DEFAULT_GRACE } from '../domain.ts';
import { failureText } from './ConfirmDialog.tsx';
import { Dialog, FormActions } from './Dialog.tsx';
import { ChoiceSelect, Field } from './Field.tsx';
import { ErrorCallout } from './ErrorCallout.tsx';

/**
 * Replaces a credential after a chosen grace period (rolling a key, rotating a signing secret): the
 * owner picks the period, and the dialog then shows what `reveal` makes of the answer (the new
 * credential, shown once). The dialog stays open with the error if the call fails.
 */
export function GraceDialog<Answer>({
  title,
  choices,
  submitLabel,
  replace,
  reveal,
  onClose,
  children,
}: {
  title: string;
  choices: readonly { value: GraceChoice; label: string }[];
  submitLabel: string;
  replace(grace: GraceChoice): Promise<Answer>;
  reveal(answer: Answer): ReactNode;
  onClose(): void;
  /** What replacing does, said before the choice. */
  children: ReactNode;
}) {
  const [grace, setGrace] = useState<GraceChoice>(DEFAULT_GRACE);
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  // Wrapped, so that an answer that is itself falsy still counts as one.
  const [answer, setAnswer] = useState<{ value: Answer }>();

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      setAnswer({ value: await replace(grace) });
    } catch (failure) {
      setError(failureText(failure));
    } finally {
      setBusy(false);
    }
  };

  if (answer) return reveal(answer.value);

  return (
    <Dialog title={title} onClose={onClose} busy={busy}>
      <p>{children}</p>
      <ErrorCallout message={error} />
      <form onSubmit={submit}>
        <Field label="Grace period">
          {(props) => <ChoiceSelect control={props} choices={choices} value={grace} onChange={setGrace} />}
        </Field>
        <FormActions submitLabel={submitLabel} busy={busy} />
      </form>
    </Dialog>
  );
}
