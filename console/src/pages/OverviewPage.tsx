import { Link } from 'react-router';
import { PageHeader } from '../components/PageHeader.tsx';
import { useConsoleApi, useSignedIn } from '../session.tsx';
import { useLoad } from '../useLoad.ts';

export function OverviewPage() {
  const consoleApi = useConsoleApi();
  const { owner, account: signedInTo } = useSignedIn();
  // Read again when the page opens: an operator may have switched API access since the owner signed in.
  const current = useLoad(consoleApi.session);
  const account = current.data?.account ?? signedInTo;
  const keys = useLoad(consoleApi.listKeys);
  const inService = keys.data?.keys.filter((key) => key.status === 'Active' || key.status === 'Expiring').length;
  const endpoint = `${window.location.origin}/graphql`;

  return (
    <>
      <PageHeader title={account.name} eyebrow="Overview" />
      <p className="lead">Signed in as {owner.email}.</p>

      <div className="cards">
        <section className="card" aria-labelledby="access-heading">
          <h2 id="access-heading">API access</h2>
          {account.apiAccessEnabled ? (
            <>
              <p className="status-line">
                <span className="badge badge-ok">Enabled</span>
              </p>
              <p>Requests made with this account's keys are served.</p>
            </>
          ) : (
            <>
              <p className="status-line">
                <span className="badge badge-danger">Disabled</span>
              </p>
              <p>
                Every request made with this account's keys is refused with HTTP 403, "API access is not enabled for
                this account". Your keys and your data are kept.
              </p>
              <p>
                API access is switched on by the operator of this service, the person or team who invited you to this
                console. Ask them to enable it for account <code>{account.id}</code>.
              </p>
            </>
          )}
        </section>

        <section className="card" aria-labelledby="keys-heading">
          <h2 id="keys-heading">API keys</h2>
          <p className="big-number">{keys.error ? '—' : (inService ?? '…')}</p>
          <p>
            {inService === 1 ? 'key in service' : 'keys in service'}
            {account.apiAccessEnabled ? '.' : ', refused while API access is disabled.'}
          </p>
          <p>
            <Link to="/settings/api-keys">Manage keys</Link>
          </p>
        </section>

        <section className="card card-wide" aria-labelledby="endpoint-heading">
          <h2 id="endpoint-heading">Calling the API</h2>
          <p>
            Send GraphQL requests to <code>{endpoint}</code> with your key in the <code>X-API-Key</code> header. Keep
            keys in environment variables or a secret manager, never in code.
          </p>
          <pre className="code-block">
            {`curl -s ${endpoint} \\\n  -H 'Content-Type: application/json' \\\n  -H "X-API-Key: $API_KEY" \\\n  -d '{"query":"{ viewer { account { name } } }"}'`}
          </pre>
          <p>
            Or <Link to="/explorer">try a query in the explorer</Link>.
          </p>
        </section>
      </div>
    </>
  );
}
