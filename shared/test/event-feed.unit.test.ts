import { describe, expect, it } from 'vitest';
import { eventFeedRoute } from '../src/event-feed.ts';

describe("the event feed route's answer", () => {
  const answer = { items: [], endCursor: 'c', hasMore: false, beyond: null };

  it('from an events service that predates `heldBack` reads as maybe held back, so a stream keeps looking soon during a rolling upgrade', () => {
    expect(eventFeedRoute.answer.parse(answer)).toMatchObject({ heldBack: true });
  });

  it('keeps what a current events service says', () => {
    expect(eventFeedRoute.answer.parse({ ...answer, heldBack: false })).toMatchObject({ heldBack: false });
  });
});
