import type { ServiceDefinition } from '@ots/shared/service';
import { accountsService } from '@ots/accounts';
import { eventsService } from '@ots/events/service';
import { fillsService } from '@ots/fills/service';
import { ordersService } from '@ots/orders/service';
import { strategiesService } from '@ots/strategies/service';

// Each definition is typed by its own database and context; this list only starts and migrates them.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyServiceDefinition = ServiceDefinition<any, any>;

/**
 * Every subgraph, in start order: a subgraph starts after those its requests call (orders after
 * strategies, fills after orders) and after events, which every producer's relay posts to. Orders'
 * relay also posts to fills, started after it: a relay backs off until it is answered.
 */
export const allServices: readonly AnyServiceDefinition[] = [accountsService, eventsService, strategiesService, ordersService, fillsService];
