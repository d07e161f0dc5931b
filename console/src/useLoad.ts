import { useCallback, useEffect, useEffectEvent, useState } from 'react';
import { ApiError } from './api.ts';

export interface Loaded<T> {
  data: T | undefined;
  error: string | undefined;
  reload(): void;
}

/** Runs a console API read when the page opens and on reload(), keeping the last good answer. */
export function useLoad<T>(load: () => Promise<T>): Loaded<T> {
  const [data, setData] = useState<T>();
  const [error, setError] = useState<string>();
  const [generation, setGeneration] = useState(0);
  // `load` is a fixed API call per page; a new generation is what asks for a fresh answer.
  const read = useEffectEvent(load);
  useEffect(() => {
    let current = true;
    read()
      .then((value) => {
        if (!current) return;
        setData(value);
        setError(undefined);
      })
      .catch((failure) => current && setError(failure instanceof ApiError ? failure.detail : 'Loading failed. Reload the page to try again.'));
    return () => {
      current = false;
    };
  }, [generation]);
  const reload = useCallback(() => setGeneration((n) => n + 1), []);
  return { data, error, reload };
}
