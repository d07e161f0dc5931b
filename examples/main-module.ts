import { pathToFileURL } from 'node:url';

/**
 * Whether the module at `moduleUrl` (its `import.meta.url`) is the program node was started with,
 * rather than imported (by a test). `import.meta.url` is percent-encoded: a path with a space or a
 * non-ASCII character only matches `process.argv[1]` made into a URL the same way.
 */
export function isMainModule(moduleUrl: string): boolean {
  return process.argv[1] !== undefined && pathToFileURL(process.argv[1]).href === moduleUrl;
}
