/**
 * How the package logs: events with fields, never on stdout (a stdio MCP
 * server's stdout is the protocol). The default writes warnings and errors to
 * stderr, one line each, and drops debug and info, as the Python SDK does with
 * no logging configured; pass `logger` to route them elsewhere.
 */

export type LogFields = Record<string, unknown>;

export interface Logger {
  debug(event: string, fields?: LogFields): void;
  info(event: string, fields?: LogFields): void;
  warn(event: string, fields?: LogFields): void;
  error(event: string, fields?: LogFields): void;
}

function line(level: string, event: string, fields?: LogFields): string {
  let text = `${level} ${event}`;
  try {
    if (fields !== undefined && Object.keys(fields).length > 0) text += ` ${JSON.stringify(fields)}`;
  } catch {
    // fields that do not serialise: the event alone
  }
  return text;
}

export const stderrLogger: Logger = {
  debug: () => {},
  info: () => {},
  warn: (event, fields) => process.stderr.write(line("warning", event, fields) + "\n"),
  error: (event, fields) => process.stderr.write(line("error", event, fields) + "\n"),
};
