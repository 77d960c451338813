// Every DuckDB instance of the project is opened here, so that none depends on the host. DuckDB takes its
// TimeZone from the host (TZ) and applies it to every TIMESTAMPTZ ↔ TIMESTAMP cast: under a zone other than
// UTC the loader shifted every stored time by the host's offset. The setting belongs to the ICU extension,
// which is not loaded while the instance is being created, so it is set right after, for the whole instance.
import { DuckDBInstance } from '@duckdb/node-api';

export async function openInstance(path: string, options: Record<string, string> = {}): Promise<DuckDBInstance> {
  const instance = await DuckDBInstance.create(path, options);
  const setup = await instance.connect();
  try {
    await setup.run(`SET GLOBAL TimeZone = 'UTC'`);
  } catch (e) {
    instance.closeSync();
    throw e;
  } finally {
    setup.closeSync();
  }
  return instance;
}
