import { print } from 'graphql';
import { data, type Client } from './requests.ts';
import type { TestStack } from './stack.ts';
import { ListEventsDocument, type EventFieldsFragment, type FullOrderFieldsFragment, type ListEventsQuery, type ListEventsQueryVariables } from './generated/operations.ts';

/** Reading the event feed in tests: producers' tests wait for their events with `ApiClient.waitForEvents`. */

export type EventResult = EventFieldsFragment;

/** One page of the feed, for tests that hold a bare key rather than an `ApiClient`. */
export async function listEvents(stack: TestStack, client: Pick<Client, 'apiKey'>, variables: ListEventsQueryVariables = {}): Promise<ListEventsQuery['listEvents']> {
  return ((await data(stack, client, print(ListEventsDocument), variables)) as ListEventsQuery).listEvents;
}

/** The order as an event shows it: the API's fields (the FullOrderFields fragment), references as ids. */
export function asEventData({ strategy, replacedBy, replacesOrderSubmission, ...fields }: FullOrderFieldsFragment) {
  return {
    ...fields,
    strategyId: strategy?.id ?? null,
    replacedByOrderSubmissionId: replacedBy?.id ?? null,
    replacesOrderSubmissionId: replacesOrderSubmission?.id ?? null,
  };
}
