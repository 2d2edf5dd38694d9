// Egress approval mid-run with the official TypeScript client
// (@modelcontextprotocol/client 2.x) in both protocol eras: a Python program
// fetches from a loopback HTTP server of this test under a name the operator
// marked approvable (`localhost:PORT`). The server asks the client's user:
// in 2025-11-25 (over stdio) with an elicitation/create request of its own,
// in 2026-07-28 (over stateless Streamable HTTP) with an input-required
// result that the client fulfils with the same handler and retries. A user
// who accepts gets the run retried and reaching the server, and is not asked
// again within the TTL; one who declines keeps the denial.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { once } from 'node:events';

import { ERAS, connect2, startHttpServer, structured, texts, show, assertNoLeftoverContainers } from '../lib/harness.mjs';

const CALL = { timeout: 180000 };

describe('egress approval through the client', () => {
    let api;
    let port;
    before(async () => {
        api = http.createServer((_req, res) => res.end('approved-api-says-hi'));
        api.listen(0, '127.0.0.1');
        await once(api, 'listening');
        port = api.address().port;
    });
    after(async () => {
        api?.close();
        await assertNoLeftoverContainers();
    });

    for (const era of ERAS) {
        describe(`protocol ${era.name}`, () => {
            let server;
            let conn;
            let answer = 'decline';
            let asked = [];
            before(async () => {
                const args = ['--network-max-tier', 'packages', '--network-approvable-hosts', `localhost:${port}`, '--pool-sizes', 'python=0'];
                const options = {
                    negotiation: era.negotiation,
                    capabilities: { elicitation: { form: {} } },
                    setup: (client) => client.setRequestHandler('elicitation/create', async (req) => {
                        asked.push(req.params.message);
                        return answer === 'accept' ? { action: 'accept', content: { allow: true } } : { action: answer };
                    }),
                };
                if (era.era === 'legacy') {
                    // A 2025 server asks with a request of its own: stdio carries it.
                    conn = await connect2({ transport: 'stdio', args, ...options });
                } else {
                    server = await startHttpServer({ args });
                    conn = await connect2({ transport: 'http', url: server.url, ...options });
                }
            });
            after(async () => {
                await conn?.close();
                if (server) {
                    const exit = await server.stop();
                    assert.deepEqual(exit, { code: 0, signal: null }, server.logs());
                }
            });

            const run = async () => {
                asked = [];
                const code = [
                    'import urllib.request',
                    'try:',
                    `    print(urllib.request.urlopen("http://localhost:${port}/").read().decode())`,
                    'except Exception as e:',
                    '    print("DENIED", e)',
                ].join('\n');
                const res = await conn.client.callTool({ name: 'run_code', arguments: { language: 'python', network: 'packages', code } }, CALL);
                return { r: structured(res), text: texts(res).join('\n') };
            };

            it('a user who declines keeps the denial', async () => {
                answer = 'decline';
                const { r } = await run();
                assert.equal(asked.length, 1, `asked ${asked.length} times: ${show(r)}`);
                assert.match(asked[0], new RegExp(`localhost`));
                assert.match(r.stdout, /DENIED/, show(r));
            });

            it('a user who accepts gets the run retried, reaching the host, and is not asked again', async () => {
                answer = 'accept';
                let { r, text } = await run();
                assert.equal(asked.length, 1, `asked ${asked.length} times: ${show(r)}`);
                assert.match(r.stdout, /approved-api-says-hi/, show(r));
                assert.match(text, /retried after the approval/, text);
                answer = 'decline';
                ({ r, text } = await run());
                assert.equal(asked.length, 0, `asked again within the TTL: ${show(r)}`);
                assert.match(r.stdout, /approved-api-says-hi/, show(r));
            });
        });
    }
});
