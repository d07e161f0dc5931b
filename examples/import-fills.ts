/**
 * A back-office job: records the fills of a venue's CSV report. Safe to re-run on the same file (or a
 * file that overlaps one already imported): each fill is keyed by its `executionId`, which the service
 * records once, so a second run records nothing new and reports the rows as already there. A row the
 * service refuses, a malformed one included, is reported with its code; the others are still imported.
 *
 *   OTS_API_KEY=svc_live_... node --import tsx examples/import-fills.ts fills.csv
 *
 * Its key needs the scopes `fills:write` and `read`: it lists each order's fills once, to tell a new
 * row from one recorded before (a `fills:write` key alone is refused that list, and the run ends).
 *
 * The file has a header row and these columns, in any order (fee, liquidity and executedAt optional):
 *   executionId,orderSubmissionId,quantity,price,fee,liquidity,executedAt
 */
import { readFile } from 'node:fs/promises';
import { parse } from 'csv-parse/sync';
import { OtsClient, OtsPayloadError, OtsRequestError, type Liquidity, type RecordFillInput } from '@ots/client';
import { isMainModule } from './main-module.ts';

export interface ImportReport {
  recorded: number;
  alreadyRecorded: number;
  /** Rows the service refused, with its reason; the others are still imported. */
  refused: { line: number; executionId: string; code: string; message: string }[];
}

type Row = Record<string, string>;

function inputOf(row: Row): RecordFillInput {
  return {
    // A missing column gives an empty id, which the service refuses for this row (and which, unlike an
    // absent filter, lists no fills).
    executionId: row.executionId ?? '',
    orderSubmissionId: row.orderSubmissionId ?? '',
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
  // The service answers a repeated fill as it answers a new one, and recordedAt is its clock, not
  // ours: what an order had before this run sent it anything, and what this run recorded, tell them apart.
  const recordedBefore = new Map<string, Set<string>>();
  const recordedNow = new Set<string>();
  for (const [index, row] of rows.entries()) {
    const input = inputOf(row);
    try {
      let before = recordedBefore.get(input.orderSubmissionId);
      if (!before) {
        const fills = await client.fills.list({ filter: { orderSubmissionId: input.orderSubmissionId } }).toArray();
        before = new Set(fills.map((fill) => fill.executionId));
        recordedBefore.set(input.orderSubmissionId, before);
      }
      await client.fills.record(input);
      if (before.has(input.executionId) || recordedNow.has(input.executionId)) {
        report.alreadyRecorded += 1;
      } else {
        report.recorded += 1;
        recordedNow.add(input.executionId);
      }
    } catch (error) {
      // A refusal (OtsPayloadError) or a malformed row (OtsRequestError: a top-level BAD_USER_INPUT) is
      // about this row alone; anything else (the key, the service) would fail every row, so it ends the run.
      if (!(error instanceof OtsPayloadError || error instanceof OtsRequestError)) throw error;
      report.refused.push({ line: index + 2, executionId: input.executionId, code: error.code ?? `HTTP ${error.status}`, message: error.message });
    }
  }
  return report;
}

if (isMainModule(import.meta.url)) {
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
