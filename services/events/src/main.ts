import { loadSubgraphConfigOrExit } from '@ots/shared/config';
import { runServiceProcess } from '@ots/shared/service';
import { eventsService } from './service.ts';

await runServiceProcess(eventsService, loadSubgraphConfigOrExit());
