import { Link } from 'react-router';
import { AuthCard } from '../components/AuthCard.tsx';

export function NotFoundPage() {
  return (
    <AuthCard title="Page not found" intro="There is no page at this address.">
      <p>
        <Link to="/">Go to the overview</Link>
      </p>
    </AuthCard>
  );
}
