// Runs validateSource in a worker thread. Validation keeps every workspace id and name in JS sets (hundreds
// of MB at a million workspaces); the main thread's heap would keep those pages after they became garbage,
// on top of DuckDB's memory in the load that follows. A worker's heap is returned whole when it exits.
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { validateSource, type ValidationResult } from './source-validator.js';

type Message = { progress: [string, number] } | { result: ValidationResult } | { error: string };

export function validateInWorker(dir: string, onProgress?: (file: string, lines: number) => void): Promise<ValidationResult> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL(import.meta.url), { workerData: dir, resourceLimits: { maxYoungGenerationSizeMb: 64 } });
    let settled: ValidationResult | Error | undefined;
    worker.on('message', (m: Message) => {
      if ('progress' in m) onProgress?.(...m.progress);
      else settled = 'result' in m ? m.result : new Error(m.error);
    });
    worker.on('error', (e) => { settled ??= e; });
    worker.on('exit', (code) => {
      if (settled instanceof Error) reject(settled);
      else if (settled) resolve(settled);
      else reject(new Error(`source validation stopped with exit code ${code}`));
    });
  });
}

if (!isMainThread && parentPort) {
  const port = parentPort;
  validateSource(workerData as string, (file, lines) => port.postMessage({ progress: [file, lines] } satisfies Message))
    .then((result) => port.postMessage({ result } satisfies Message), (e: Error) => port.postMessage({ error: e.message } satisfies Message));
}
