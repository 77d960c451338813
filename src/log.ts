// One JSON object per line on stdout. Never pass a token or an Authorization header here.
export type Level = 'debug' | 'info' | 'warn' | 'error';

export interface Logger {
  log(level: Level, msg: string, fields?: Record<string, unknown>): void;
}

export const jsonLogger = (write: (line: string) => void = (l) => process.stdout.write(l)): Logger => ({
  log(level, msg, fields = {}) {
    write(JSON.stringify({ time: new Date().toISOString(), level, msg, ...fields }) + '\n');
  },
});

export const silentLogger: Logger = { log() {} };
