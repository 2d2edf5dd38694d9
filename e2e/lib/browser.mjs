// Helpers of the browser tests: Debian's Chromium, headless, driven by
// playwright-core (no browser download: the system's binary), a host page
// of MCP Apps served from this process, and screenshots kept as artifacts.

import http from 'node:http';
import { once } from 'node:events';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import assert from 'node:assert/strict';

import { chromium } from 'playwright-core';
import { build } from 'esbuild';

import { IS_CI } from './harness.mjs';

const here = dirname(fileURLToPath(import.meta.url));

/** The Chromium the tests drive: MCR_CHROMIUM, else Debian's. */
export const CHROMIUM = process.env.MCR_CHROMIUM ?? '/usr/bin/chromium';

/** Where screenshots go: MCR_SCREENSHOTS, else e2e/artifacts/screenshots. */
export const SCREENSHOTS = process.env.MCR_SCREENSHOTS ?? join(here, '..', 'artifacts', 'screenshots');

/**
 * Skips the suite's tests when there is no Chromium (under CI=true it
 * fails: .ci/run installs it through scripts/ensure-test-tools.sh).
 */
export function chromiumOrSkip(t) {
    if (existsSync(CHROMIUM)) return true;
    assert.ok(!IS_CI, `no Chromium at ${CHROMIUM}: scripts/ensure-test-tools.sh installs Debian's chromium`);
    t.skip(`no Chromium at ${CHROMIUM} (apt-get install chromium, or set MCR_CHROMIUM)`);
    return false;
}

/**
 * How long a browser test waits for something the server does (a sandbox
 * started, an execution ended, an event pushed): on a loaded 2-core machine
 * these took up to 15 s where they take 1 s on a quiet one. Playwright's
 * default of 30 s is too close; the waits end as soon as their condition holds.
 */
export const WAIT = 90000;

/** Launches headless Chromium. As root it needs --no-sandbox. */
export async function launch() {
    const args = ['--disable-gpu', '--disable-dev-shm-usage'];
    if (process.getuid?.() === 0) args.push('--no-sandbox');
    return chromium.launch({ executablePath: CHROMIUM, headless: true, args });
}

/** Saves a screenshot of page as NAME.png among the artifacts. */
export async function screenshot(page, name) {
    mkdirSync(SCREENSHOTS, { recursive: true });
    const path = join(SCREENSHOTS, `${name}.png`);
    await page.screenshot({ path, fullPage: true });
    console.log(`# screenshot: ${path}`);
    return path;
}

/**
 * Serves the MCP Apps host page (browser/host.html, with its bundle of the
 * package's app-bridge and the official client) on a loopback port, and
 * passes /mcp through to the server at mcpURL, so that the page's client
 * talks to the server from the page's own origin. Returns { url, close }.
 */
export async function startHostSite(mcpURL) {
    const bundle = await build({
        entryPoints: [join(here, '..', 'browser', 'host-entry.mjs')],
        bundle: true, format: 'esm', platform: 'browser', target: 'es2022', write: false, logLevel: 'error',
    });
    const js = bundle.outputFiles[0].contents;
    const page = readFileSync(join(here, '..', 'browser', 'host.html'));
    const target = new URL(mcpURL);
    const srv = http.createServer((req, res) => {
        if (req.url === '/' || req.url === '/index.html') {
            res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(page);
        } else if (req.url === '/host.js') {
            res.writeHead(200, { 'content-type': 'text/javascript' }).end(js);
        } else if (req.url.startsWith('/mcp')) {
            const headers = { ...req.headers, host: target.host };
            const up = http.request({ host: target.hostname, port: target.port, path: target.pathname, method: req.method, headers }, (ur) => {
                res.writeHead(ur.statusCode, ur.headers);
                ur.pipe(res);
            });
            up.on('error', (e) => res.writeHead(502).end(String(e)));
            req.pipe(up);
        } else {
            res.writeHead(404).end();
        }
    });
    srv.listen(0, '127.0.0.1');
    await once(srv, 'listening');
    return {
        url: `http://127.0.0.1:${srv.address().port}/`,
        close: () => { srv.closeAllConnections(); srv.close(); },
    };
}
