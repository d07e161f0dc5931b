import { readFileSync } from 'node:fs';
import { printSchema } from 'graphql';
import { describe, expect, it } from 'vitest';
import { breakingChanges, composeSupergraph, PUBLISHED_API_FILE } from '../src/compose.ts';

const published = readFileSync(PUBLISHED_API_FILE, 'utf8');

describe('the published API evolves additively (contract section 9)', () => {
  const { apiSchema } = composeSupergraph();

  it('the composed API breaks nothing of the committed published API', () => {
    expect(breakingChanges(published, apiSchema)).toEqual([]);
  });

  it('the committed published API is the composed one: additive changes are committed with their change', () => {
    expect(published).toBe(`${printSchema(apiSchema)}\n`);
  });

  it('removing a published field is caught', () => {
    const withExtraField = published.replace('type Account {', 'type Account {\n  legacyCode: String');
    expect(breakingChanges(withExtraField, apiSchema)).toEqual([expect.stringContaining('Account.legacyCode was removed')]);
  });

  it('changing a published field type is caught', () => {
    const narrower = published.replace(/type Account \{([^}]*)name: String!/, 'type Account {$1name: Int!');
    expect(breakingChanges(narrower, apiSchema)).toEqual([expect.stringContaining('Account.name changed type')]);
  });

  it('internal operations are not published', () => {
    expect(published).not.toMatch(/applyFill|ApplyFill/);
  });
});
