import type { ServiceDefinition } from '@ots/shared/service';
import { accountsService } from '../services/accounts/src/service.ts';
import { eventsService } from '../services/events/src/service.ts';
import { fillsService } from '../services/fills/src/service.ts';
import { ordersService } from '../services/orders/src/service.ts';
import { strategiesService } from '../services/strategies/src/service.ts';

// Each definition is typed by its own database and context; this list only starts and migrates them.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyServiceDefinition = ServiceDefinition<any, any>;

/** Every subgraph, in start order: a subgraph that calls another starts after it (producers' outbox relays call events). */
export const allServices: readonly AnyServiceDefinition[] = [accountsService, eventsService, strategiesService, ordersService, fillsService];
