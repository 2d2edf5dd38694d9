// Packages over MCP with the official 2.x client: a JavaScript session
// installs lodash from the real npm registry (reachable from these
// machines; npm itself fetches it, through the server's egress proxy) and
// requires it; install_packages adds another; a one-shot run_code then gets
// lodash from the server's cache.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { ERAS, startHttpServer, connect2, structured, show, assertNoLeftoverContainers } from '../lib/harness.mjs';

const LONG = { timeout: 300000 };

describe('packages over MCP (2.x client, Streamable HTTP)', () => {
    let server;
    let conn;
    const cache = mkdtempSync(join(tmpdir(), 'mcr-e2e-packages-'));
    before(async () => {
        server = await startHttpServer({
            args: ['--network-max-tier', 'packages', '--pool-sizes', 'javascript=0', '--packages-cache-dir', cache],
        });
        conn = await connect2({ transport: 'http', url: server.url, negotiation: ERAS[0].negotiation });
    });
    after(async () => {
        await conn?.close();
        if (server) {
            const exit = await server.stop();
            assert.deepEqual(exit, { code: 0, signal: null }, server.logs());
        }
        rmSync(cache, { recursive: true, force: true });
        await assertNoLeftoverContainers();
    });

    it('a JavaScript session installs lodash, requires it, and adds ms with install_packages', async () => {
        const c = conn.client;
        const session = structured(await c.callTool({ name: 'create_session', arguments: { language: 'javascript', packages: ['lodash@4'] } }, LONG));
        assert.ok(session.packages.some((p) => p.name === 'lodash' && p.version.startsWith('4.')), show(session));
        const run = async (code) => structured(await c.callTool({ name: 'run_code', arguments: { language: 'javascript', session_id: session.session_id, timeout_seconds: 60, code } }, LONG));
        let r = await run("const _ = require('lodash'); JSON.stringify(_.chunk([1, 2, 3, 4], 2))");
        assert.ok(r.value.includes('[[1,2],[3,4]]'), show(r));
        const installed = structured(await c.callTool({ name: 'install_packages', arguments: { session_id: session.session_id, packages: ['ms@2.1.3'] } }, LONG));
        assert.ok(installed.packages.some((p) => p.name === 'ms' && p.version === '2.1.3'), show(installed));
        r = await run("require('ms')('2h')");
        assert.ok(r.value.includes('7200000'), show(r));
        structured(await c.callTool({ name: 'close_session', arguments: { session_id: session.session_id } }));
    });

    it('run_code with packages gets them from the cache the session filled', async () => {
        const r = structured(await conn.client.callTool({ name: 'run_code', arguments: {
            language: 'javascript', packages: ['lodash@4'], timeout_seconds: 60, code: "console.log(require('lodash').chunk([1, 2, 3, 4], 2).length)",
        } }, LONG));
        assert.equal(r.status, 'ok', show(r));
        assert.equal(r.stdout.trim(), '2', show(r));
        assert.equal(r.packages_cached, true, show(r));
    });

    it('a tier above the maximum is refused with what to do', async () => {
        const res = await conn.client.callTool({ name: 'run_code', arguments: { language: 'javascript', network: 'allowlist', code: '1' } });
        assert.equal(res.isError, true);
        assert.match(res.content[0].text, /above this server's maximum/);
    });
});
