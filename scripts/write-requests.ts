/** The requests both write benches send (`bench-writes.ts` as a client, `write-latency.ts` in process), so that their figures are of the same work. */

export const SUBMIT = 'mutation ($input: SubmitOrderInput!) { submitOrder(input: $input) { orderSubmission { id } error { code } } }';
export const CANCEL = 'mutation ($id: ID!) { cancelOrderSubmission(id: $id) { orderSubmission { id status } error { code } } }';
export const RECORD_FILL =
  'mutation ($input: RecordFillInput!) { recordFill(input: $input) { fill { id } orderSubmission { status filledQuantity } error { code } } }';
export const VIEWER = '{ viewer { account { id name } apiKey { id displayPrefix } } }';
export const ORDER_INPUT = { symbol: 'AAPL', side: 'BUY', type: 'LIMIT', quantity: '10', limitPrice: '187.25' };

export type Operation = 'viewer' | 'submitOrder' | 'cancelOrderSubmission' | 'recordFill';
