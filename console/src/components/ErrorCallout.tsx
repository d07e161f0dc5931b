/** A failure the owner must read, announced to screen readers; nothing when there is none. */
export function ErrorCallout({ message }: { message: string | undefined }) {
  if (!message) return null;
  return (
    <p className="callout callout-danger" role="alert">
      {message}
    </p>
  );
}
