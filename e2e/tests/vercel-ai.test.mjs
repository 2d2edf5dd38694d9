// The Vercel AI SDK's MCP client (@ai-sdk/mcp, with `ai`) connected as its
// users connect it: createMCPClient over stdio and Streamable HTTP, its
// tools() handed to generateText. The model is the SDK's own mock
// (ai/test), so no provider is called: it records the tool definitions the
// SDK converts for a provider and calls run_code, which the SDK executes
// through its MCP client.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { asSchema, generateText, stepCountIs } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { createMCPClient } from '@ai-sdk/mcp';
import { Experimental_StdioMCPTransport as StdioMCPTransport } from '@ai-sdk/mcp/mcp-stdio';

import { BIN, addServerPid, assertNoLeftoverContainers, httpServerFor, needLanguage, serverEnv, structured } from '../lib/harness.mjs';

const TOOLS = [
    'cancel_execution', 'close_session', 'create_session', 'fork_session', 'get_execution', 'install_packages',
    'list_executions', 'list_files', 'list_languages', 'list_sessions', 'pause_session', 'read_file', 'run_code',
    'start_execution', 'write_file',
];

const usage = {
    inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
    outputTokens: { total: 1, text: 1, reasoning: undefined },
};

for (const transport of ['stdio', 'http']) {
    describe(`Vercel AI SDK MCP client over ${transport}`, () => {
        const http = httpServerFor(transport);
        // Nested, so that the client closes before the HTTP server stops.
        describe('createMCPClient and its tools in generateText', () => {
            let client;
            let tools;
            let langs;
            before(async () => {
                let t = { type: 'http', url: http.server?.url };
                if (transport === 'stdio') {
                    t = new StdioMCPTransport({ command: BIN, args: ['serve', '--log-level', 'warn'], env: serverEnv(), stderr: 'ignore' });
                }
                client = await createMCPClient({ transport: t, clientName: 'mcr-e2e-ai-sdk' });
                if (transport === 'stdio') addServerPid(t.process?.pid);
                tools = await client.tools();
                const list = structured(await tools.list_languages.execute({}, { toolCallId: 'langs', messages: [] }));
                langs = new Map(list.languages.map((l) => [l.name, l]));
            });
            after(async () => {
                await client?.close();
            });

            it('lists and converts all 15 tools', () => {
                assert.deepEqual(Object.keys(tools).sort(), TOOLS);
                for (const [name, tool] of Object.entries(tools)) {
                    const schema = asSchema(tool.inputSchema).jsonSchema;
                    assert.equal(schema.type, 'object', `${name}: ${JSON.stringify(schema)}`);
                    assert.ok(tool.description, `${name} has no description`);
                }
                const env = asSchema(tools.run_code.inputSchema).jsonSchema.properties.env;
                assert.equal(env.items?.additionalProperties, false, `env is not a list of closed name/value pairs: ${JSON.stringify(env)}`);
            });

            it('runs run_code with env from a model turn of generateText', async (t) => {
                if (!needLanguage(t, langs, 'bash')) return;
                const model = new MockLanguageModelV3({
                    doGenerate: [
                        {
                            content: [{
                                type: 'tool-call', toolCallId: 'call-1', toolName: 'run_code',
                                input: JSON.stringify({ language: 'bash', code: 'echo "$GREETING, $1"', args: ['world'], env: [{ name: 'GREETING', value: 'hello' }] }),
                            }],
                            finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage, warnings: [],
                        },
                        { content: [{ type: 'text', text: 'done' }], finishReason: { unified: 'stop', raw: 'stop' }, usage, warnings: [] },
                    ],
                });
                const result = await generateText({ model, tools, prompt: 'say hello', stopWhen: stepCountIs(3) });
                const offered = model.doGenerateCalls[0].tools;
                assert.deepEqual(offered.map((x) => x.name).sort(), TOOLS);
                const runCode = offered.find((x) => x.name === 'run_code');
                assert.equal(runCode.type, 'function');
                assert.deepEqual(runCode.inputSchema.properties.env.items.required, ['name', 'value']);
                const [call] = result.steps[0].toolResults;
                assert.equal(call?.toolName, 'run_code', JSON.stringify(result.steps[0].content).slice(0, 2000));
                const r = structured(call.output);
                assert.equal(r.status, 'ok', JSON.stringify(r));
                assert.equal(r.stdout, 'hello, world\n', JSON.stringify(r));
                assert.equal(result.text, 'done');
            });
        });
    });
}

after(() => assertNoLeftoverContainers());
