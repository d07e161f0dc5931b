/**
 * A back-office job: records the fills of a venue's CSV report. Safe to re-run on the same file (or a
 * file that overlaps one already imported): each fill is keyed by its `executionId`, which the service
 * records once, so a second run records nothing new and reports the rows as already there.
 *
 *   OTS_API_KEY=svc_live_... node --import tsx examples/import-fills.ts fills.csv
 *
 * The file has a header row and these columns, in any order (fee, liquidity and executedAt optional):
 *   executionId,orderSubmissionId,quantity,price,fee,liquidity,executedAt
 */
import { readFile } from 'node:fs/promises';
import { parse } from 'csv-parse/sync';
import { OtsClient, OtsPayloadError, type Liquidity, type RecordFillInput } from '@ots/client';

export interface ImportReport {
  recorded: number;
  alreadyRecorded: number;
  /** Rows the service refused, with its reason; the others are still imported. */
  refused: { line: number; executionId: string; code: string; message: string }[];
}

type Row = Record<string, string>;

function inputOf(row: Row): RecordFillInput {
  return {
    executionId: row.executionId!,
    orderSubmissionId: row.orderSubmissionId!,
    quantity: row.quantity!,
    price: row.price!,
    ...(row.fee ? { fee: row.fee } : {}),
    ...(row.liquidity ? { liquidity: row.liquidity as Liquidity } : {}),
    ...(row.executedAt ? { executedAt: row.executedAt } : {}),
  };
}

export async function importFills(client: OtsClient, csv: string): Promise<ImportReport> {
  const rows = parse(csv, { columns: true, skip_empty_lines: true, trim: true }) as Row[];
  const report: ImportReport = { recorded: 0, alreadyRecorded: 0, refused: [] };
  const startedAt = Date.now();
  for (const [index, row] of rows.entries()) {
    try {
      const { fill } = await client.fills.record(inputOf(row));
      // The service answers a fill it already has with the recorded one: older than this run.
      if (Date.parse(fill.recordedAt) < startedAt) report.alreadyRecorded += 1;
      else report.recorded += 1;
    } catch (error) {
      if (!(error instanceof OtsPayloadError)) throw error;
      report.refused.push({ line: index + 2, executionId: row.executionId ?? '', code: error.code, message: error.message });
    }
  }
  return report;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const file = process.argv[2];
  if (!file || !process.env.OTS_API_KEY) {
    console.error('usage: OTS_API_KEY=svc_live_... [OTS_BASE_URL=http://127.0.0.1:4000] import-fills.ts FILE.csv');
    process.exit(2);
  }
  const client = new OtsClient({ apiKey: process.env.OTS_API_KEY, baseUrl: process.env.OTS_BASE_URL });
  const report = await importFills(client, await readFile(file, 'utf8'));
  console.log(JSON.stringify(report, null, 2));
  process.exitCode = report.refused.length > 0 ? 1 : 0;
}
