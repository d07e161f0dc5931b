import { useState, type MouseEvent } from 'react';
import { NavLink, Outlet, useNavigate } from 'react-router';
import { useSession, useSignedIn } from '../session.tsx';
import { failureText } from './ConfirmDialog.tsx';
import { ErrorCallout } from './ErrorCallout.tsx';
import { Logo } from './Logo.tsx';

export function Layout() {
  const { owner, account } = useSignedIn();
  const { signOut } = useSession();
  const navigate = useNavigate();

  const [signOutFailure, setSignOutFailure] = useState<string>();

  // A link, as the contract names it, that posts the sign-out before it goes to the sign-in page; a
  // sign-out the server did not take leaves the owner here, signed in and told so.
  const onSignOut = async (event: MouseEvent<HTMLAnchorElement>) => {
    event.preventDefault();
    setSignOutFailure(undefined);
    try {
      await signOut();
    } catch (failure) {
      setSignOutFailure(`Signing out failed, and you are still signed in: ${failureText(failure)}`);
      return;
    }
    navigate('/sign-in', { replace: true });
  };

  return (
    <div className="shell">
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <header className="sidebar">
        <div className="sidebar-top">
          <Logo />
          <p className="sidebar-account" title={account.name}>
            {account.name}
          </p>
        </div>
        <nav className="nav" aria-label="Console">
          <ul>
            <li>
              <NavLink to="/" end>
                Overview
              </NavLink>
            </li>
            <li className="nav-group">
              <span className="nav-group-label" aria-hidden="true">
                Settings
              </span>
              <ul aria-label="Settings">
                <li>
                  <NavLink to="/settings/api-keys">API Keys</NavLink>
                </li>
                <li>
                  <NavLink to="/settings/security-log">Security log</NavLink>
                </li>
                <li>
                  <NavLink to="/settings/webhooks">Webhooks</NavLink>
                </li>
              </ul>
            </li>
            <li>
              <NavLink to="/explorer">API explorer</NavLink>
            </li>
          </ul>
        </nav>
        <div className="sidebar-bottom">
          <p className="sidebar-owner" title={owner.email}>
            {owner.email}
          </p>
          <a href="/sign-in" className="sign-out" onClick={onSignOut}>
            Sign out
          </a>
        </div>
      </header>
      <main id="main" className="main" tabIndex={-1}>
        <ErrorCallout message={signOutFailure} />
        <Outlet />
      </main>
    </div>
  );
}
