import { spawn, type ChildProcess } from 'node:child_process';
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

/** A process left running: what it has printed so far, stdout and stderr as they came. */
export class StartedProcess {
  output = '';

  constructor(readonly child: ChildProcess) {
    child.stdout!.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
  }

  /** Waits until the output matches `ready`; throws with the output when the process ends first or `timeoutMs` pass. */
  async started(ready: RegExp, what: string, timeoutMs: number): Promise<void> {
    const since = Date.now();
    while (!ready.test(this.output)) {
      if (this.child.exitCode !== null || Date.now() - since > timeoutMs) throw new Error(`${what} did not start:\n${this.output}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

/** Starts a node entry point in the repository's root, with exactly `env`, and leaves it running. */
export function startNodeProcess(args: readonly string[], env: NodeJS.ProcessEnv): StartedProcess {
  return new StartedProcess(spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] }));
}
