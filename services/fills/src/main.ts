import { loadSubgraphConfigOrExit } from '@ots/shared/config';
import { runServiceProcess } from '@ots/shared/service';
import { fillsService } from './service.ts';

await runServiceProcess(fillsService, loadSubgraphConfigOrExit());
