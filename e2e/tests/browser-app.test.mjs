// The run view (an MCP App) in a real browser: Debian's Chromium, headless,
// renders it in a host page built on the package's own host side
// (@modelcontextprotocol/ext-apps/app-bridge) whose official client talks to
// the server. A python run that plots shows the plot and its output (markup
// a program prints stays text), an execution's output streams into the view
// and the view's Cancel ends it; screenshots are kept as artifacts.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { startHttpServer, assertNoLeftoverContainers } from '../lib/harness.mjs';
import { WAIT, chromiumOrSkip, launch, screenshot, startHostSite } from '../lib/browser.mjs';

// painted resolves once frame has painted what it holds (two animation
// frames), so that a screenshot shows it.
const painted = (frame) => frame.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));

const PLOT = `import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
xs = list(range(20))
plt.plot(xs, [x * x for x in xs], marker="o")
plt.title("squares")
plt.savefig("squares.png")
with open("table.csv", "w") as f:
    f.write("x,square\\n" + "".join(f"{x},{x*x}\\n" for x in range(5)))
print("plotted 20 points")
print("<script>window.pwned = 1</script><b>not bold</b>")
`;

// Long enough (120 s) to be running still after the slowest waits below.
const STREAM = `import time
for i in range(600):
    print(f"line {i}", flush=True)
    time.sleep(0.2)
`;

describe('the run view in Chromium', { timeout: 300000 }, () => {
    let server, site, browser, page;
    before(async (t) => {
        if (!chromiumOrSkip(t)) return;
        server = await startHttpServer();
        site = await startHostSite(server.url);
        browser = await launch();
        page = await browser.newPage({ viewport: { width: 820, height: 1150 } });
        page.setDefaultTimeout(WAIT);
        page.on('pageerror', (e) => console.log('# page error:', e.message));
        await page.goto(site.url);
        await page.waitForFunction(() => window.hostReady === true);
        const withView = await page.evaluate(() => window.host.connect());
        assert.ok(withView.includes('run_code') && withView.includes('get_execution'), `tools naming the view: ${withView}`);
    });
    after(async () => {
        await browser?.close();
        site?.close();
        if (server) {
            const exit = await server.stop();
            assert.deepEqual(exit, { code: 0, signal: null }, server.logs());
            await assertNoLeftoverContainers();
        }
    });

    it('shows a python run\'s plot, its table and its output, with markup as text', async (t) => {
        if (!page) return t.skip('no Chromium');
        const res = await page.evaluate((code) => window.host.show('run_code', { language: 'python', code }, 'dark'), PLOT);
        assert.equal(res.status, 'ok', JSON.stringify(res));
        const view = page.frameLocator('#view');
        await view.locator('#status[data-status="ok"]').waitFor();
        assert.match(await view.locator('#stdout').textContent(), /plotted 20 points/);
        // The program's markup is text: shown as printed, not run or parsed.
        assert.match(await view.locator('#stdout').textContent(), /<script>window\.pwned = 1<\/script><b>not bold<\/b>/);
        assert.equal(await view.locator('#stdout script, #stdout b').count(), 0);
        const frame = page.frames().find((f) => f !== page.mainFrame());
        assert.equal(await frame.evaluate(() => window.pwned), undefined);
        // The view follows the host's theme.
        assert.equal(await frame.evaluate(() => document.documentElement.dataset.theme), 'dark');
        // The plot is an image that decoded; the CSV is a table.
        const img = view.locator('#artifacts img.plot');
        await img.waitFor();
        await frame.waitForFunction(() => {
            const i = document.querySelector('img.plot');
            return i && i.complete && i.naturalWidth > 100;
        });
        await view.locator('table.data td', { hasText: '16' }).first().waitFor();
        assert.match(await view.locator('#code').textContent(), /plt\.savefig/);
        assert.ok(await view.locator('#code .tok-k').count() > 0, 'the code is highlighted');
        await painted(frame);
        await screenshot(page, 'app-run-python-plot');
    });

    it('streams an execution\'s output and cancels it from the view', async (t) => {
        if (!page) return t.skip('no Chromium');
        const started = await page.evaluate((code) => window.host.show('start_execution', { language: 'python', code, timeout_seconds: 300 }, 'light'), STREAM);
        assert.equal(started.status, 'running');
        const view = page.frameLocator('#view');
        // Output arrives while the execution runs: the view polls
        // get_execution through the host.
        await view.locator('#stdout', { hasText: 'line 5' }).waitFor({ timeout: WAIT });
        assert.equal(await view.locator('#status').getAttribute('data-status'), 'running');
        await painted(page.frames().find((f) => f !== page.mainFrame()));
        await screenshot(page, 'app-execution-streaming');
        await view.locator('#cancel').click();
        await view.locator('#status[data-status="cancelled"]').waitFor({ timeout: WAIT });
        const snap = await page.evaluate((id) => window.host.call('get_execution', { execution_id: id }), started.execution_id);
        assert.equal(snap.status, 'cancelled');
        assert.ok(!/line 599/.test(snap.stdout), 'the program ran to its end');
    });

    it('re-runs the code, and opens it in a session', async (t) => {
        if (!page) return t.skip('no Chromium');
        await page.evaluate(() => window.host.show('run_code', { language: 'python', code: 'x = 41\nprint(x + 1)' }, 'light'));
        const view = page.frameLocator('#view');
        await view.locator('#status[data-status="ok"]').waitFor();
        // Re-run: the same program again, as an execution the view follows.
        await view.locator('#rerun').click();
        await view.locator('#status[data-status="finished"]').waitFor({ timeout: WAIT });
        assert.match(await view.locator('#stdout').textContent(), /^42\n?$/);
        // Open in a session: a session of the language runs the code.
        await view.locator('#open-session').click();
        await view.locator('#note', { hasText: 'opened in session' }).waitFor({ timeout: WAIT });
        const note = await view.locator('#note').textContent();
        const sessionID = note.match(/sess-[0-9a-f]+/)?.[0];
        assert.ok(sessionID, note);
        assert.match(await view.locator('#stdout').textContent(), /42/);
        const list = await page.evaluate(() => window.host.call('list_sessions', {}));
        assert.ok(list.sessions.some((s) => s.session_id === sessionID), `the view's session ${sessionID} is not the caller's`);
        await page.evaluate((id) => window.host.call('close_session', { session_id: id }), sessionID);
    });

    it('offers no action to a host that cannot call tools', async (t) => {
        if (!page) return t.skip('no Chromium');
        await page.evaluate(() => window.host.show('run_code', { language: 'python', code: 'print("plain")' }, 'light', {}));
        const view = page.frameLocator('#view');
        await view.locator('#status[data-status="ok"]').waitFor();
        assert.match(await view.locator('#stdout').textContent(), /plain/);
        assert.equal(await view.locator('button').count(), 0);
    });

    it('shows a compiled language\'s compile stage', async (t) => {
        if (!page) return t.skip('no Chromium');
        const code = '#include <stdio.h>\nint main(void) { int unused; printf("compiled\\n"); return 3; }\n';
        const res = await page.evaluate((c) => window.host.show('run_code', { language: 'c', code: c }, 'dark'), code);
        assert.ok(res.compile, JSON.stringify(res));
        const view = page.frameLocator('#view');
        await view.locator('#status[data-status="error"]').waitFor();
        assert.match(await view.locator('h3', { hasText: 'compile: exit 0' }).textContent(), /compile: exit 0 in \d+ ms/);
        assert.match(await view.locator('#stdout').textContent(), /compiled/);
        assert.match(await view.locator('.exit').textContent(), /exit 3/);
    });
});
