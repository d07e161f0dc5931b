import type { Compilable, CompiledQuery, Kysely } from 'kysely';
import { prepareStatement } from './db.ts';

/**
 * Kysely builds and compiles a query anew on every call: a tree of frozen nodes, then the SQL text.
 * For the statements every write runs that was a large share of the Node thread under load (the
 * orders README, Performance), for SQL text that never changes. A compiled statement is
 * built once, on its first call, with a placeholder for each value, and each call binds its values
 * to the compiled text: the same query, written with the same builder and checked by the same types.
 * No library does this for the Kysely we use (kysely-params depends on Kysely 0.24).
 *
 * The build function must only pass its parameters into the query: a parameter is a placeholder,
 * and computing with one (formatting, concatenating, JSON) throws when the statement is first built.
 * Values that vary in shape (a list for `in`, an optional clause) cannot be placeholders: bind a
 * list as one array (`= any(${p.ids}::uuid[])`) and make each shape its own statement.
 */
export type CompiledStatement<DB, Params, Row> = (db: Kysely<DB>, params: Params) => Promise<Row[]>;

/** What a parameter may hold: a value pg sends as one parameter. An object's fields would be read off its placeholder. */
type Bindable = string | number | boolean | Date | null | undefined | readonly string[];

class Placeholder {
  constructor(readonly name: string) {}

  [Symbol.toPrimitive](): never {
    throw new Error(`compiled statement: parameter "${this.name}" was computed on while the statement was built; compute it before binding it`);
  }

  toJSON(): never {
    return this[Symbol.toPrimitive]();
  }
}

const placeholders = new Proxy(
  {},
  {
    get: (_, name) => {
      if (typeof name !== 'string') throw new Error('compiled statement: parameters are named by strings');
      return new Placeholder(name);
    },
  },
);

export interface CompiledStatementOptions {
  /**
   * Sent to Postgres as a named statement, parsed and planned once per connection (`prepareStatement`
   * in db.ts says what such a statement must be). Its result columns are named: building one that
   * selects or returns `*` throws.
   */
  prepared?: boolean;
}

/** A `*` that Postgres would expand to a table's columns when it prepares the statement: `select *`, `returning *`, `"t".*`. */
const EVERY_COLUMN = /(?:\bselect|\breturning|,|\.)\s*\*/i;

export function compiledStatement<DB, Params extends { [Name in keyof Params]: Bindable }, Row>(
  build: (db: Kysely<DB>, params: Params) => Compilable<Row>,
  options: CompiledStatementOptions = {},
): CompiledStatement<DB, Params, Row> {
  let compiled: CompiledQuery<Row> | undefined;
  let bind: ((params: Params) => unknown[]) | undefined;
  return async (db, params) => {
    if (!compiled || !bind) {
      compiled = build(db, placeholders as Params).compile();
      if (options.prepared) {
        if (EVERY_COLUMN.test(compiled.sql)) throw new Error(`compiled statement: a prepared statement names its columns, not *: ${compiled.sql}`);
        prepareStatement(compiled.sql);
      }
      const sources = compiled.parameters.map((value) => (value instanceof Placeholder ? value.name : { constant: value }));
      bind = (values) => sources.map((source) => (typeof source === 'string' ? values[source as keyof Params] : source.constant));
    }
    const result = await db.executeQuery<Row>({ ...compiled, parameters: bind(params) });
    return result.rows;
  };
}
