// Debian's chromium as the page tests drive it (playwright-core), and what a page must not do: throw, log an
// error, or break its Content Security Policy.
import { chromium, type Browser, type Page } from 'playwright-core';

const CHROMIUM = '/usr/bin/chromium';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

/** Headless chromium from the Debian package (`make test-deps` installs it). */
export const launchChromium = (): Promise<Browser> => chromium.launch({ executablePath: CHROMIUM, args: ARGS });

/** Collects `page`'s uncaught errors, console errors and CSP violations into `problems`. */
export function watchProblems(page: Page, problems: string[]): void {
  page.on('pageerror', (e) => problems.push(e.message));
  page.on('console', (m) => { if (m.type() === 'error' || /Content.Security.Policy/i.test(m.text())) problems.push(m.text()); });
}
