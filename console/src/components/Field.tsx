import { useId, type ReactNode } from 'react';

export interface ControlProps {
  id: string;
  'aria-describedby'?: string;
  'aria-invalid'?: true;
}

/** A labelled form control with its hint and its error, both announced with the control. */
export function Field({ label, hint, error, children }: { label: string; hint?: ReactNode; error?: string; children: (props: ControlProps) => ReactNode }) {
  const id = useId();
  const hintId = `${id}-hint`;
  const errorId = `${id}-error`;
  const describedBy = [error && errorId, hint && hintId].filter(Boolean).join(' ');
  return (
    <div className={`field${error ? ' field-invalid' : ''}`}>
      <label htmlFor={id}>{label}</label>
      {children({ id, ...(describedBy ? { 'aria-describedby': describedBy } : {}), ...(error ? { 'aria-invalid': true } : {}) })}
      {hint && (
        <p className="hint" id={hintId}>
          {hint}
        </p>
      )}
      {error && (
        <p className="field-error" id={errorId}>
          {error}
        </p>
      )}
    </div>
  );
}

/** One of fixed choices, as a Field's control. */
export function ChoiceSelect<Value extends string>({
  control,
  choices,
  value,
  onChange,
}: {
  control: ControlProps;
  choices: readonly { value: Value; label: string }[];
  value: NoInfer<Value>;
  onChange(value: NoInfer<Value>): void;
}) {
  return (
    <select {...control} value={value} onChange={(event) => onChange(event.target.value as Value)}>
      {choices.map((choice) => (
        <option key={choice.value} value={choice.value}>
          {choice.label}
        </option>
      ))}
    </select>
  );
}
