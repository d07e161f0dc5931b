import { useEffect, useState, type FormEvent } from 'react';
import { Link, useLocation, useNavigate } from 'react-router';
import { ApiError } from '../api.ts';
import { AuthCard } from '../components/AuthCard.tsx';
import { Field } from '../components/Field.tsx';
import { Loading } from '../components/Loading.tsx';
import { MIN_PASSWORD_LENGTH, passwordProblem, tokenFromFragment } from '../domain.ts';
import { useConsoleApi, useSession } from '../session.tsx';

export function SetPasswordPage() {
  const consoleApi = useConsoleApi();
  const { signedIn } = useSession();
  const navigate = useNavigate();
  const token = tokenFromFragment(useLocation().hash);
  const [password, setPassword] = useState('');
  const [fieldError, setFieldError] = useState<string>();
  const [linkError, setLinkError] = useState<string>();
  const [busy, setBusy] = useState(false);
  // A used or expired link is said so when the page opens, not after a password was chosen for nothing.
  const [linkChecked, setLinkChecked] = useState(false);
  const [spentLink, setSpentLink] = useState<string>();

  useEffect(() => {
    if (!token) return;
    let current = true;
    consoleApi.checkSetPasswordLink(token).then(
      () => current && setLinkChecked(true),
      (failure: unknown) => {
        if (!current) return;
        // Only the server's refusal of the link; when the check itself fails, the form stays and the submission tells.
        if (failure instanceof ApiError && failure.status === 400) setSpentLink(failure.detail);
        setLinkChecked(true);
      },
    );
    return () => {
      current = false;
    };
  }, [consoleApi, token]);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const problem = passwordProblem(password);
    setFieldError(problem);
    setLinkError(undefined);
    if (problem || !token) return;
    setBusy(true);
    try {
      signedIn(await consoleApi.setPassword(token, password));
      // Replacing the entry drops the spent token from the browser's history.
      navigate('/', { replace: true });
    } catch (failure) {
      const apiError = failure instanceof ApiError ? failure : undefined;
      if (apiError?.field === 'password') setFieldError(apiError.detail);
      else setLinkError(apiError?.detail ?? 'Setting the password failed. Try again.');
    } finally {
      setBusy(false);
    }
  };

  if (!token) {
    return (
      <AuthCard title="Set password">
        <p className="callout callout-danger" role="alert">
          This link is incomplete. Open the set-password link exactly as you received it, or ask the operator of this
          service for a new one.
        </p>
        <p className="auth-help">
          Already have a password? <Link to="/sign-in">Sign in</Link>
        </p>
      </AuthCard>
    );
  }

  if (!linkChecked) return <Loading label="Checking the link" />;

  if (spentLink) {
    return (
      <AuthCard title="Set password">
        <div className="callout callout-danger" role="alert">
          <p>{spentLink}: it was used already, or more than 24 hours have passed.</p>
          <p>Set-password links work once and for 24 hours. Ask the operator of this service for a new one.</p>
        </div>
        <p className="auth-help">
          Already set your password? <Link to="/sign-in">Sign in</Link>
        </p>
      </AuthCard>
    );
  }

  return (
    <AuthCard title="Set password" intro="Choose the password you will sign in with. Setting it signs you in.">
      {linkError && (
        <div className="callout callout-danger" role="alert">
          <p>{linkError}</p>
          <p>Set-password links work once and for 24 hours. Ask the operator of this service for a new one.</p>
        </div>
      )}
      <form onSubmit={submit} noValidate>
        <Field
          label="New password"
          hint={`At least ${MIN_PASSWORD_LENGTH} characters. A few unrelated words make a strong password that is easy to type.`}
          error={fieldError}
        >
          {(props) => (
            <input
              {...props}
              type="password"
              autoComplete="new-password"
              required
              value={password}
              onChange={(event) => setPassword(event.target.value)}
            />
          )}
        </Field>
        <button type="submit" className="button button-primary button-block" disabled={busy}>
          Set password
        </button>
      </form>
    </AuthCard>
  );
}
