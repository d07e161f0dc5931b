import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));

export interface Finished {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  /** Given: the environment is only what a shell would pass (PATH, HOME) and this, none of the test run's own configuration. */
  env?: Record<string, string>;
  /** For a command that, were it wrongly accepted, would start a service and not end: killed then. */
  killAfterMs?: number;
}

/** Runs a command in the repository's root to its end, as an operator would, keeping what it prints. */
export async function runCommand(command: string, args: readonly string[], options: RunOptions = {}): Promise<Finished> {
  const env = options.env && { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...options.env };
  const child = spawn(command, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const timer = options.killAfterMs === undefined ? undefined : setTimeout(() => child.kill('SIGKILL'), options.killAfterMs);
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  clearTimeout(timer);
  return { code, stdout, stderr };
}
