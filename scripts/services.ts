import type { ServiceDefinition } from '@ots/shared/service';
import { accountsService } from '@ots/accounts';
import { eventsService } from '@ots/events/service';
import { fillsService } from '@ots/fills/service';
import { ordersService } from '@ots/orders/service';
import { strategiesService } from '@ots/strategies/service';

// Each definition is typed by its own database and context; this list only starts and migrates them.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyServiceDefinition = ServiceDefinition<any, any>;

/** Every subgraph, in start order: a subgraph that calls another starts after it (producers' outbox relays call events). */
export const allServices: readonly AnyServiceDefinition[] = [accountsService, eventsService, strategiesService, ordersService, fillsService];
