import { loadSubgraphConfigOrExit } from '@ots/shared/config';
import { runServiceProcess } from '@ots/shared/service';
import { ordersService } from './service.ts';

await runServiceProcess(ordersService, loadSubgraphConfigOrExit());
