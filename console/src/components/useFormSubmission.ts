import { useState, type FormEvent } from 'react';
import { ApiError } from '../api.ts';
import type { FormResult } from '../domain.ts';
import { failureText } from './ConfirmDialog.tsx';

/**
 * A create form's submission: the form is checked in the browser first (`check`), then sent. A
 * refusal, local or from the server, that names one of the form's `fields` is shown beside that
 * field; any other failure above the form.
 */
export function useFormSubmission<Request>(fields: readonly string[], check: () => FormResult<Request>, send: (request: Request) => Promise<void>) {
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [formError, setFormError] = useState<string>();
  const [busy, setBusy] = useState(false);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const checked = check();
    setFormError(undefined);
    if (!checked.ok) {
      setErrors({ [checked.field]: checked.message });
      return;
    }
    setErrors({});
    setBusy(true);
    try {
      await send(checked.value);
    } catch (failure) {
      const field = failure instanceof ApiError ? failure.field : undefined;
      if (field && fields.includes(field)) setErrors({ [field]: failureText(failure) });
      else setFormError(failureText(failure));
    } finally {
      setBusy(false);
    }
  };

  return { errors, formError, busy, submit };
}
