import { describe, expect, it } from 'vitest';
import { newId, parseUuid, receiveId } from '../src/ids.ts';

describe('parseUuid', () => {
  it('gives a UUID in its canonical lower-case form, whatever case it was sent in', () => {
    const id = newId();
    expect(parseUuid(id)).toBe(id);
    expect(parseUuid(id.toUpperCase())).toBe(id);
  });

  it('gives nothing for text that is not a UUID, so it never reaches a query', () => {
    for (const text of ['', 'not-a-uuid', `${newId()} `, newId().replaceAll('-', ''), `${newId()}0`]) {
      expect(parseUuid(text), text).toBeUndefined();
    }
  });

  it('keeps the text as sent beside the parsed id, for messages', () => {
    const id = newId();
    expect(receiveId(id.toUpperCase())).toEqual({ uuid: id, sent: id.toUpperCase() });
    expect(receiveId('nope')).toEqual({ uuid: undefined, sent: 'nope' });
  });
});
