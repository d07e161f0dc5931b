import { loadSubgraphConfigOrExit } from '@ots/shared/config';
import { runServiceProcess } from '@ots/shared/service';
import { accountsService } from './service.ts';

await runServiceProcess(accountsService, loadSubgraphConfigOrExit());
