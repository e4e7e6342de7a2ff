/**
 * The event-type catalog: names, descriptions, optional JSON Schemas (draft 2020-12) that
 * enqueue validates payloads against. Each schema is compiled once per version (schema_version
 * grows with every change) and kept compiled; which types have a schema is re-read at most once
 * a second, so a schema change reaches every API process within a second and the enqueue path
 * costs no query in between.
 */
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import type { Sql } from '../db/connect.js';

export interface EventType {
  name: string;
  description: string;
  schema: Record<string, unknown> | boolean | null;
  example: unknown;
  deprecated: boolean;
  schema_version: number;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = 'name, description, schema, example, deprecated, schema_version, created_at, updated_at';

/** A schema that does not compile, or an example that does not match its schema. */
export class SchemaError extends Error {}

/** A payload that does not match its event type's schema: where and why, never the value. */
export interface SchemaMismatch {
  eventType: string;
  pointer: string;
  keyword: string;
  message: string;
}

function newAjv() {
  // strict: false accepts the annotations and vendor keywords real schemas carry; unknown
  // formats are ignored rather than refused. No remote $ref loading: a schema is self-contained.
  return new Ajv2020({ strict: false, allErrors: false, validateFormats: false });
}

/** Compiles a schema, throwing SchemaError with ajv's reason when it is not a valid 2020-12 schema. */
export function compileSchema(schema: unknown): ValidateFunction {
  const ajv = newAjv();
  try {
    return ajv.compile(schema as Record<string, unknown>);
  } catch (error) {
    throw new SchemaError(`schema: ${(error as Error).message}`);
  }
}

/** The JSON pointer of the failing part: `required` names the missing member itself. */
function pointerOf(error: ErrorObject): string {
  const missing = (error.params as { missingProperty?: string }).missingProperty;
  if (error.keyword === 'required' && missing !== undefined) {
    return `${error.instancePath}/${missing.replace(/~/g, '~0').replace(/\//g, '~1')}`;
  }
  return error.instancePath;
}

/** Where and why `validate` last failed: the first ajv error as a JSON pointer, never the value. */
export function firstMismatch(eventType: string, validate: ValidateFunction): SchemaMismatch {
  const error = validate.errors?.[0];
  return {
    eventType,
    pointer: error ? pointerOf(error) : '',
    keyword: error?.keyword ?? 'schema',
    message: error?.message ?? 'does not match the schema',
  };
}

/**
 * Creates or updates an event type; a given schema must compile (and match its example), else
 * SchemaError. The version grows only when the schema actually changes.
 */
export async function putEventType(
  sql: Sql,
  name: string,
  input: {
    description?: string | undefined;
    schema?: Record<string, unknown> | boolean | null | undefined;
    example?: unknown;
    deprecated?: boolean | undefined;
  },
): Promise<{ eventType: EventType; created: boolean }> {
  if (input.schema !== undefined && input.schema !== null) {
    const validate = compileSchema(input.schema);
    if (input.example !== undefined && !validate(input.example)) {
      const m = firstMismatch(name, validate);
      throw new SchemaError(`example${m.pointer}: ${m.message}`);
    }
  }
  const schema = input.schema === undefined ? undefined : input.schema;
  const [row] = await sql<(EventType & { created: boolean })[]>`
    INSERT INTO event_types (name, description, schema, example, deprecated)
    VALUES (${name}, ${input.description ?? ''}, ${schema == null ? null : sql.json(schema as never)},
            ${input.example === undefined ? null : sql.json(input.example as never)}, ${input.deprecated ?? false})
    ON CONFLICT (name) DO UPDATE SET
      description = CASE WHEN ${input.description === undefined} THEN event_types.description ELSE excluded.description END,
      schema = CASE WHEN ${schema === undefined} THEN event_types.schema ELSE excluded.schema END,
      example = CASE WHEN ${input.example === undefined} THEN event_types.example ELSE excluded.example END,
      deprecated = CASE WHEN ${input.deprecated === undefined} THEN event_types.deprecated ELSE excluded.deprecated END,
      schema_version = event_types.schema_version
        + CASE WHEN ${schema !== undefined} AND event_types.schema IS DISTINCT FROM excluded.schema THEN 1 ELSE 0 END,
      updated_at = now()
    RETURNING ${sql.unsafe(COLUMNS)}, (xmax = 0) AS created`;
  const { created, ...eventType } = row!;
  return { eventType, created };
}

/** One event type by name. */
export async function getEventType(sql: Sql, name: string): Promise<EventType | undefined> {
  const [row] = await sql<EventType[]>`SELECT ${sql.unsafe(COLUMNS)} FROM event_types WHERE name = ${name}`;
  return row;
}

/** Keyset page by name. */
export async function listEventTypes(
  sql: Sql,
  options: { limit: number; cursor?: string | undefined },
): Promise<EventType[]> {
  return sql<EventType[]>`
    SELECT ${sql.unsafe(COLUMNS)} FROM event_types WHERE name > ${options.cursor ?? ''}
    ORDER BY name LIMIT ${options.limit}`;
}

/** Removes an event type and its schema; false when there was none. */
export async function deleteEventType(sql: Sql, name: string): Promise<boolean> {
  const rows = await sql`DELETE FROM event_types WHERE name = ${name} RETURNING name`;
  return rows.length > 0;
}

/** How long the list of schema-carrying types is reused before it is read again. */
const CATALOG_TTL_MS = 1000;

/**
 * The validators enqueue uses. `validatorsFor()` answers from memory while the catalog read is
 * under a second old; compiled validators are kept per (name, version), so a schema is compiled
 * once per version per process, not per request.
 */
export class SchemaCatalog {
  private versions = new Map<string, number>();
  private readAt = 0;
  private reading: Promise<void> | undefined;
  private readonly compiled = new Map<string, { version: number; validate: ValidateFunction }>();

  constructor(private readonly sql: Sql) {}

  /** Forgets the catalog read, so this process sees its own PUT or DELETE at once. */
  invalidate(): void {
    this.readAt = 0;
  }

  private async refresh(): Promise<void> {
    const rows = await this.sql<{ name: string; schema_version: number }[]>`
      SELECT name, schema_version FROM event_types WHERE schema IS NOT NULL`;
    this.versions = new Map(rows.map((r) => [r.name, r.schema_version]));
    this.readAt = Date.now();
  }

  /** The validator of each of `eventTypes` that has a schema now. */
  async validatorsFor(eventTypes: Iterable<string>): Promise<Map<string, ValidateFunction>> {
    if (Date.now() - this.readAt > CATALOG_TTL_MS) {
      this.reading ??= this.refresh().finally(() => {
        this.reading = undefined;
      });
      await this.reading;
    }
    const found = new Map<string, ValidateFunction>();
    for (const name of new Set(eventTypes)) {
      const version = this.versions.get(name);
      if (version === undefined) continue;
      let entry = this.compiled.get(name);
      if (!entry || entry.version !== version) {
        const [row] = await this.sql<{ schema: unknown; schema_version: number }[]>`
          SELECT schema, schema_version FROM event_types WHERE name = ${name} AND schema IS NOT NULL`;
        if (!row) continue;
        entry = { version: row.schema_version, validate: compileSchema(row.schema) };
        this.compiled.set(name, entry);
      }
      found.set(name, entry.validate);
    }
    return found;
  }
}
