export function Logo() {
  return (
    <span className="logo">
      <svg className="logo-mark" viewBox="0 0 32 32" aria-hidden="true" focusable="false">
        <rect width="32" height="32" rx="8" />
        <path d="M7 21l6-7 5 4 7-9" />
      </svg>
      <span className="logo-text">Order Trading</span>
    </span>
  );
}
