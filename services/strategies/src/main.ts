import { loadSubgraphConfigOrExit } from '@ots/shared/config';
import { runServiceProcess } from '@ots/shared/service';
import { strategiesService } from './service.ts';

await runServiceProcess(strategiesService, loadSubgraphConfigOrExit());
