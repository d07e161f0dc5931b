import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
import { parse } from 'graphql';
import type { Uuid } from '@ots/shared/ids';
import { callSubgraph, SubgraphUnavailableError } from '@ots/shared/subgraph-client';
import type { StrategyStatus } from './domain.ts';

/**
 * The strategy as an entity reference, as the gateway itself resolves one: `strategy(id)` is a root
 * field that needs the `read` scope, which a key that only places orders does not hold, while
 * naming a strategy on an order is part of placing it. Typed here by hand since the federation
 * fields (`_entities`) are not in strategies' schema.graphql, which codegen reads.
 */
const OrdersStrategyStatusDocument = parse(`
  query OrdersStrategyStatus($representations: [_Any!]!) {
    _entities(representations: $representations) {
      ... on Strategy {
        id
        status
      }
    }
  }
`) as TypedDocumentNode<
  { _entities: ({ id: string; status: StrategyStatus } | null)[] },
  { representations: { __typename: 'Strategy'; id: string }[] }
>;

/**
 * The status of one of the caller's strategies, or null when it does not exist or is another
 * account's. Throws SubgraphUnavailableError when the strategies subgraph gives no usable answer.
 */
export type StrategyLookup = (strategyId: Uuid) => Promise<StrategyStatus | null>;

const STATUSES: ReadonlySet<string> = new Set<StrategyStatus>(['ACTIVE', 'PAUSED', 'ARCHIVED']);

export interface StrategyLookupOptions {
  strategiesUrl: string;
  timeoutMs: number;
  /** The caller's assertion and request id, forwarded so that strategies scopes its answer to the same account. */
  assertion: string;
  requestId: string;
}

/** Asks the strategies subgraph, never its schema: orders reads no other service's tables. */
export function strategyLookup(options: StrategyLookupOptions): StrategyLookup {
  return async (strategyId) => {
    const response = await callSubgraph({
      caller: 'orders',
      subgraph: 'strategies',
      url: options.strategiesUrl,
      document: OrdersStrategyStatusDocument,
      variables: { representations: [{ __typename: 'Strategy', id: strategyId }] },
      assertion: options.assertion,
      requestId: options.requestId,
      timeoutMs: options.timeoutMs,
    });
    const strategy = response.data?._entities[0];
    if (strategy === null && !response.errors?.length) return null;
    if (strategy && STATUSES.has(strategy.status)) return strategy.status;
    // An error answer (e.g. its database is down) says nothing about the strategy: the order cannot be checked.
    const reason = response.errors?.map((error) => error.message).join('; ') ?? 'an answer without a strategy status';
    throw new SubgraphUnavailableError(`strategies answered ${reason}`);
  };
}
