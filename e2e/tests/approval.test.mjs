// Egress approval mid-run with both generations of the official TypeScript
// client: @modelcontextprotocol/client 2.x in both protocol eras, and
// @modelcontextprotocol/sdk 1.x, the client most MCP hosts embed, in
// 2025-11-25. A Python program fetches from a loopback HTTP server of this
// test under a name the operator marked approvable (`localhost:PORT`). The
// server asks the client's user: in 2025-11-25 (over stdio) with an
// elicitation/create request of its own, in 2026-07-28 (over stateless
// Streamable HTTP) with an input-required result that the client fulfils
// with the same handler and retries. Each client first shows which protocol
// version it agreed on. A user who accepts gets the run retried and
// reaching the server, and is not asked again within the TTL; one who
// declines keeps the denial.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { once } from 'node:events';

import { Client as Client1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as StdioClientTransport1 } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

import { BIN, ERAS, connect2, startHttpServer, serverEnv, addServerPid, structured, texts, show, assertNoLeftoverContainers } from '../lib/harness.mjs';

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

    // The clients: each connects with an elicitation handler and says
    // which protocol version it agreed on.
    const clients = [
        ...ERAS.map((era) => ({
            name: `@modelcontextprotocol/client 2.x, protocol ${era.name}`,
            version: era.version,
            connect: async (args, onElicit) => {
                const options = {
                    negotiation: era.negotiation,
                    capabilities: { elicitation: { form: {} } },
                    setup: (client) => client.setRequestHandler('elicitation/create', (req) => onElicit(req.params.message)),
                };
                let server;
                let conn;
                if (era.era === 'legacy') {
                    // A 2025 server asks with a request of its own: stdio carries it.
                    conn = await connect2({ transport: 'stdio', args, ...options });
                } else {
                    server = await startHttpServer({ args });
                    conn = await connect2({ transport: 'http', url: server.url, ...options });
                }
                return {
                    server,
                    agreed: () => conn.client.getNegotiatedProtocolVersion(),
                    callTool: (params) => conn.client.callTool(params, CALL),
                    close: () => conn.close(),
                };
            },
        })),
        {
            name: '@modelcontextprotocol/sdk 1.x, protocol 2025-11-25',
            version: '2025-11-25',
            connect: async (args, onElicit) => {
                // Declared as hosts of the 2025 era do: elicitation with no
                // mode, which means form.
                const client = new Client1({ name: 'mcr-e2e-sdk1', version: '1.0.0' }, { capabilities: { elicitation: {} } });
                client.setRequestHandler(ElicitRequestSchema, (req) => onElicit(req.params.message));
                const t = new StdioClientTransport1({ command: BIN, args: ['serve', ...args], env: serverEnv(), stderr: 'ignore' });
                // The 1.x client hands the agreed version to a transport
                // that takes it; its stdio transport keeps none of its own.
                let agreed;
                t.setProtocolVersion = (v) => {
                    agreed = v;
                };
                await client.connect(t, { timeout: 30000 });
                addServerPid(t.pid);
                return {
                    agreed: () => agreed,
                    callTool: (params) => client.callTool(params, undefined, CALL),
                    close: () => client.close(),
                };
            },
        },
    ];

    for (const c of clients) {
        describe(c.name, () => {
            let conn;
            let answer = 'decline';
            let asked = [];
            before(async () => {
                const args = ['--network-max-tier', 'packages', '--network-approvable-hosts', `localhost:${port}`, '--pool-sizes', 'python=0'];
                conn = await c.connect(args, async (message) => {
                    asked.push(message);
                    return answer === 'accept' ? { action: 'accept', content: { allow: true } } : { action: answer };
                });
            });
            after(async () => {
                await conn?.close();
                if (conn?.server) {
                    const exit = await conn.server.stop();
                    assert.deepEqual(exit, { code: 0, signal: null }, conn.server.logs());
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
                const res = await conn.callTool({ name: 'run_code', arguments: { language: 'python', network: 'packages', code } });
                return { r: structured(res), text: texts(res).join('\n') };
            };

            it(`agrees on protocol ${c.version}`, () => {
                assert.equal(conn.agreed(), c.version);
            });

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
