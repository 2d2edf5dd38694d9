// The 1.x TypeScript SDK (@modelcontextprotocol/sdk), the client most MCP
// hosts still embed, speaking 2025-11-25 over stdio and Streamable HTTP.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import {
    BIN, startHttpServer, addServerPid, serverEnv, languages, needLanguage, structured, show, texts,
    assertNoLeftoverContainers,
} from '../lib/harness.mjs';

/** run_code through the 1.x API: callTool(params, resultSchema, options). */
async function runCode(client, args) {
    return structured(await client.callTool({ name: 'run_code', arguments: args }, undefined, { timeout: 120000 }));
}


for (const transport of ['stdio', 'http']) {
    describe(`sdk 1.x over ${transport}`, () => {
        let server;
        let client;
        let langs;
        before(async () => {
            let t;
            if (transport === 'http') {
                server = await startHttpServer();
                t = new StreamableHTTPClientTransport(new URL(server.url));
            } else {
                t = new StdioClientTransport({ command: BIN, args: ['serve'], env: serverEnv(), stderr: 'ignore' });
            }
            client = new Client({ name: 'mcr-e2e-sdk1', version: '1.0.0' });
            await client.connect(t, { timeout: 30000 });
            if (transport === 'stdio') addServerPid(t.pid);
            langs = await languages(client);
        });
        after(async () => {
            await client?.close();
            if (server) {
                const exit = await server.stop();
                assert.deepEqual(exit, { code: 0, signal: null }, server.logs());
            }
        });

        it('initializes with 2025-11-25', () => {
            assert.equal(client.getServerVersion()?.name, 'mcp-code-runner');
            assert.ok(client.getInstructions()?.includes('run_code'));
            // The 1.x client keeps the negotiated version on the transport for HTTP.
            if (transport === 'http') assert.equal(client.transport.protocolVersion, '2025-11-25');
        });

        it('lists the tools', async () => {
            const { tools } = await client.listTools();
            const names = tools.map((t) => t.name);
            for (const want of ['list_languages', 'run_code']) assert.ok(names.includes(want), `${want} in ${names}`);
        });

        it('runs bash and validates the structured output', async (t) => {
            if (!needLanguage(t, langs, 'bash')) return;
            // callTool validates structuredContent against the listed outputSchema.
            const r = await runCode(client, { language: 'shell', code: 'read x; echo "got $x and $GREETING"', stdin: '42\n', env: { GREETING: 'hi' } });
            assert.equal(r.status, 'ok', show(r));
            assert.equal(r.stdout, 'got 42 and hi\n', show(r));
        });

        it('passes input files to python', async (t) => {
            if (!needLanguage(t, langs, 'python')) return;
            const r = await runCode(client, {
                language: 'python3',
                code: "import pathlib\nprint(pathlib.Path('data/in.txt').read_text().strip(), pathlib.Path('b.bin').read_bytes().hex())",
                files: [
                    { path: 'data/in.txt', content: 'from a file\n' },
                    { path: 'b.bin', content: Buffer.from([0, 1, 254, 255]).toString('base64'), encoding: 'base64' },
                ],
            });
            assert.equal(r.status, 'ok', show(r));
            assert.equal(r.stdout, 'from a file 0001feff\n', show(r));
        });

        it('answers an unknown language with isError', async () => {
            const r = await client.callTool({ name: 'run_code', arguments: { language: 'klingon', code: 'x' } });
            assert.equal(r.isError, true);
            assert.match(texts(r).join('\n'), /unknown language "klingon".*python/s);
        });

        it('reads mcr://languages and completes a language', async () => {
            const read = await client.readResource({ uri: 'mcr://languages' });
            assert.ok(JSON.parse(read.contents[0].text).languages.length >= 4);
            const c = await client.complete({ ref: { type: 'ref/prompt', name: 'solve_with_code' }, argument: { name: 'language', value: 'ba' } });
            assert.ok(c.completion.values.includes('bash'), JSON.stringify(c));
            assert.ok(c.completion.values.every((v) => v.startsWith('ba')), JSON.stringify(c));
        });

        it('gets test_code', async () => {
            const got = await client.getPrompt({ name: 'test_code', arguments: { code: 'def add(a, b): return a + b', language: 'python' } });
            assert.match(got.messages[0].content.text, /def add\(a, b\)/);
        });

        it('a missing required prompt argument is a JSON-RPC error', async () => {
            await assert.rejects(client.getPrompt({ name: 'test_code', arguments: { language: 'python' } }));
        });

        it('bad prompt arguments are answered with -32602', async () => {
            await assert.rejects(client.getPrompt({ name: 'solve_with_code', arguments: { task: 'x', language: 'intercal' } }), (e) => {
                assert.equal(e.code, -32602, `code ${e.code}: ${e.message}`);
                return true;
            });
        });
    });
}

after(async () => {
    await assertNoLeftoverContainers();
});
