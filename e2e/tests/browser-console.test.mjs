// The operator console in a real browser: Debian's Chromium, headless. An
// operator signs in with an operator's token, sees a client's session and
// execution appear live (server-sent events), cancels the execution,
// pauses and closes the session; a client's token gets 403 and no token
// 401; cross-site actions are refused; text from outside (a reflected
// message) stays text; screenshots are kept as artifacts.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';

import { ERAS, startHttpServer, connect2, structured, assertNoLeftoverContainers } from '../lib/harness.mjs';
import { WAIT, chromiumOrSkip, launch, screenshot } from '../lib/browser.mjs';

const TOKENS = { alice: randomBytes(24).toString('hex'), ops: randomBytes(24).toString('hex') };
// An operator's secret, which alice's session is given by name: the console
// shows the name, never the value. Its host is never reached.
const SECRET = randomBytes(24).toString('hex');
// Long enough (300 s) to be running still after the slowest waits below.
const LOOP = `import time
print("<script>window.pwned = 1</script>", flush=True)
for i in range(3000):
    print(f"tick {i}", flush=True)
    time.sleep(0.1)
`;

describe('the operator console in Chromium', { timeout: 300000 }, () => {
    let server, browser, context, page, alice, base;
    before(async (t) => {
        if (!chromiumOrSkip(t)) return;
        const dir = mkdtempSync(join(tmpdir(), 'mcr-console-'));
        const config = join(dir, 'config.json');
        writeFileSync(config, JSON.stringify({ network: {
            max_tier: 'allowlist', allowlist: ['api.secret.test'],
            secrets: [{ name: 'api', hosts: ['api.secret.test'], header: 'Authorization', format: 'Bearer {value}', value_env: 'MCR_E2E_CONSOLE_SECRET' }],
        } }));
        process.env.MCR_E2E_CONSOLE_SECRET = SECRET; // the server's environment (serverEnv copies ours)
        server = await startHttpServer({
            args: ['--config', config, '--http-auth-tokens', `alice=${TOKENS.alice},ops=${TOKENS.ops}`, '--http-operators', 'ops', '--audit-log', join(dir, 'audit.log')],
        });
        delete process.env.MCR_E2E_CONSOLE_SECRET;
        base = `http://${server.addr}`;
        alice = await connect2({ transport: 'http', url: server.url, negotiation: ERAS[0].negotiation, token: TOKENS.alice });
        browser = await launch();
        context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
        context.setDefaultTimeout(WAIT);
        page = await context.newPage();
        page.on('pageerror', (e) => console.log('# page error:', e.message));
    });
    after(async () => {
        await browser?.close();
        await alice?.close();
        if (server) {
            const exit = await server.stop();
            assert.deepEqual(exit, { code: 0, signal: null }, server.logs());
            for (const tok of [...Object.values(TOKENS), SECRET]) assert.ok(!server.logs().includes(tok), 'a token or secret appears in the server log');
            await assertNoLeftoverContainers();
        }
    });

    it('answers no token with 401 and a client\'s token with 403', async (t) => {
        if (!page) return t.skip('no Chromium');
        assert.equal((await fetch(`${base}/console`)).status, 401);
        assert.equal((await fetch(`${base}/console`, { headers: { Authorization: `Bearer ${TOKENS.alice}` } })).status, 403);
        assert.equal((await fetch(`${base}/console/events`, { headers: { Authorization: `Bearer ${TOKENS.alice}` } })).status, 403);
        assert.equal((await fetch(`${base}/console`, { headers: { Authorization: 'Bearer not-a-token' } })).status, 401);
        // In the browser: the login page, and a client's token refused.
        const res = await page.goto(`${base}/console`);
        assert.equal(res.status(), 401);
        await page.fill('#token', TOKENS.alice);
        const [denied] = await Promise.all([page.waitForNavigation(), page.click('button')]);
        assert.equal(denied.status(), 403);
        assert.match(await page.textContent('#denied'), /Only operators/);
        const cookies = await context.cookies();
        assert.equal(cookies.length, 0, 'a client\'s token got a console session');
    });

    it('shows a client\'s session and execution live, and the operator cancels, pauses and closes them', async (t) => {
        if (!page) return t.skip('no Chromium');
        await page.goto(`${base}/console`);
        await page.fill('#token', TOKENS.ops);
        await Promise.all([page.waitForNavigation(), page.click('button')]);
        assert.equal(await page.textContent('#who'), 'ops');
        const cookie = (await context.cookies()).find((c) => c.name === 'mcr_console');
        assert.ok(cookie?.httpOnly && cookie.sameSite === 'Strict', JSON.stringify(cookie));
        await page.locator('#conn[data-state="live"]').waitFor();

        // A client's session appears without a reload.
        const session = structured(await alice.client.callTool({ name: 'create_session', arguments: { language: 'python', network: 'allowlist', secrets: ['api'] } }));
        const srow = page.locator(`#sessions tr[data-session="${session.session_id}"]`);
        await srow.waitFor({ timeout: WAIT });
        assert.match(await srow.textContent(), /alice/);
        assert.match(await srow.textContent(), /python/);
        assert.equal(await srow.locator('code', { hasText: /^api$/ }).count(), 1, 'the session\'s secret is named');

        // So does an execution; the operator cancels it.
        const exec = structured(await alice.client.callTool({ name: 'start_execution', arguments: { language: 'python', code: LOOP, timeout_seconds: 600 } }));
        const erow = page.locator(`#executions tr[data-execution="${exec.execution_id}"]`);
        await erow.waitFor({ timeout: WAIT });
        assert.match(await erow.textContent(), /alice/);
        await screenshot(page, 'console-live');
        // The console shows no program output (operators manage clients'
        // work without reading it), so nothing the program printed is here.
        assert.ok(!(await page.content()).includes('pwned'));
        for (const tok of [...Object.values(TOKENS), SECRET]) assert.ok(!(await page.content()).includes(tok), 'the page shows a token or a secret');
        await Promise.all([page.waitForNavigation(), erow.locator('button[name="cancel"]').click()]);
        assert.match(await page.textContent('#flash'), new RegExp(`execution ${exec.execution_id} cancelled`));
        const after = structured(await alice.client.callTool({ name: 'get_execution', arguments: { execution_id: exec.execution_id } }));
        assert.equal(after.status, 'cancelled');
        await page.locator(`#ended tr[data-execution="${exec.execution_id}"] .status-cancelled`).waitFor();

        // Pause the session, then close it.
        await Promise.all([page.waitForNavigation(), srow.locator('button[name="pause"]').click()]);
        assert.match(await page.textContent('#flash'), /paused/);
        const prow = page.locator(`#paused tr[data-session="${session.session_id}"]`);
        await prow.waitFor();
        await Promise.all([page.waitForNavigation(), prow.locator('button[name="close"]').click()]);
        assert.match(await page.textContent('#flash'), /closed/);
        const gone = await alice.client.callTool({ name: 'run_code', arguments: { language: 'python', code: 'print(1)', session_id: session.session_id } });
        assert.ok(gone.isError, 'the closed session still runs code');
        await screenshot(page, 'console-after-actions');
    });

    it('refuses cross-site and token-less actions, and keeps reflected text as text', async (t) => {
        if (!page) return t.skip('no Chromium');
        const cookie = (await context.cookies()).find((c) => c.name === 'mcr_console');
        assert.ok(cookie, 'not signed in');
        const session = structured(await alice.client.callTool({ name: 'create_session', arguments: { language: 'python' } }));
        const action = `${base}/console/sessions/${session.session_id}/close`;
        const post = (headers, body = '') => fetch(action, {
            method: 'POST', redirect: 'manual', body,
            headers: { Cookie: `mcr_console=${cookie.value}`, 'Content-Type': 'application/x-www-form-urlencoded', ...headers },
        });
        assert.equal((await post({ Origin: 'http://evil.example' })).status, 403, 'a cross-site Origin');
        assert.equal((await post({ 'Sec-Fetch-Site': 'cross-site' })).status, 403, 'a cross-site fetch without Origin');
        assert.equal((await post({})).status, 403, 'no CSRF token');
        assert.equal((await post({}, 'csrf=forged')).status, 403, 'a forged CSRF token');
        const list = structured(await alice.client.callTool({ name: 'list_sessions', arguments: {} }));
        assert.ok(list.sessions.some((s) => s.session_id === session.session_id), 'a refused action closed the session');
        await alice.client.callTool({ name: 'close_session', arguments: { session_id: session.session_id } });

        // Whatever a link puts in the page is escaped.
        const hostile = '<img src=x onerror="window.pwned=1"><script>window.pwned=2</script>';
        await page.goto(`${base}/console?done=${encodeURIComponent(hostile)}`);
        assert.equal(await page.textContent('#flash'), hostile);
        assert.equal(await page.locator('#flash img, #flash script').count(), 0);
        assert.equal(await page.evaluate(() => window.pwned), undefined);
    });
});
