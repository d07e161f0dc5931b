import { useState, type FormEvent } from 'react';
import { Navigate, useLocation } from 'react-router';
import { ApiError } from '../api.ts';
import { AuthCard } from '../components/AuthCard.tsx';
import { Field } from '../components/Field.tsx';
import { retryAfterText } from '../domain.ts';
import { useConsoleApi, useSession } from '../session.tsx';
import { ErrorCallout } from '../components/ErrorCallout.tsx';

export function SignInPage() {
  const consoleApi = useConsoleApi();
  const { session, notice, signedIn } = useSession();
  const location = useLocation();
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);

  if (session) {
    const from = (location.state as { from?: string } | null)?.from;
    return <Navigate to={from && from !== '/sign-in' ? from : '/'} replace />;
  }

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      signedIn(await consoleApi.signIn(email.trim(), password));
    } catch (failure) {
      const apiError = failure instanceof ApiError ? failure : undefined;
      setError(apiError ? apiError.detail + retryAfterText(apiError.retryAfterSeconds) : 'Signing in failed. Try again.');
      setPassword('');
    } finally {
      setBusy(false);
    }
  };

  return (
    <AuthCard title="Sign in" intro="Manage your account's API keys and see who did what.">
      {notice && !error && (
        <p className="callout callout-info" role="status">
          {notice}
        </p>
      )}
      <ErrorCallout message={error} />
      <form onSubmit={submit} noValidate>
        <Field label="Email">
          {(props) => (
            <input {...props} type="email" autoComplete="username" required value={email} onChange={(event) => setEmail(event.target.value)} />
          )}
        </Field>
        <Field label="Password">
          {(props) => (
            <input {...props} type="password" autoComplete="current-password" required value={password} onChange={(event) => setPassword(event.target.value)} />
          )}
        </Field>
        <button type="submit" className="button button-primary button-block" disabled={busy}>
          Sign in
        </button>
      </form>
      <p className="auth-help">
        New here, or forgot your password? Ask the operator of this service for a set-password link.
      </p>
    </AuthCard>
  );
}
