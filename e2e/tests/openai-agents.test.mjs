// The OpenAI Agents SDK (@openai/agents) connected as its users connect it:
// an Agent with the server as an MCP server (stdio and Streamable HTTP) and
// mcpConfig.convertSchemasToStrict, run by the SDK's Runner. The model is a
// scripted stand-in, so no OpenAI API is called: it records the tool
// definitions the SDK would send and answers with the tool calls a model in
// strict mode makes (every property present, null for the optional ones),
// which the SDK parses, calls through its MCP client, and hands back.
//
// 0.14.3 is the newest release for Node 20 (later ones need Node 22 through
// openai 7); its strict conversion lets an open object through, which the
// OpenAI API then refuses in strict mode, and later releases refuse it
// themselves ("Cannot convert an open JSON schema object to strict mode"):
// assertStrictSchema checks the API's rules on what the SDK produced.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { Agent, MCPServerStdio, MCPServerStreamableHttp, RunContext, Runner, Usage } from '@openai/agents';

import { BIN, addServerPid, assertNoLeftoverContainers, httpServerFor, needLanguage, serverEnv } from '../lib/harness.mjs';

const TOOLS = [
    'cancel_execution', 'close_session', 'create_session', 'fork_session', 'get_execution', 'install_packages',
    'list_executions', 'list_files', 'list_languages', 'list_sessions', 'pause_session', 'read_file', 'run_code',
    'start_execution', 'write_file',
];

/**
 * Asserts the rules of OpenAI's strict mode on a converted schema: every
 * object is closed (additionalProperties false) and requires every property
 * it declares; an object with no declared properties is open by nature.
 */
function assertStrictSchema(schema, path) {
    if (typeof schema !== 'object' || schema === null) return;
    const types = [schema.type].flat();
    if (types.includes('object') || schema.properties) {
        assert.equal(schema.additionalProperties, false, `${path}: an open object (additionalProperties ${JSON.stringify(schema.additionalProperties)})`);
        const props = Object.keys(schema.properties ?? {});
        assert.ok(props.length > 0 || path === '', `${path}: an object without properties`);
        assert.deepEqual([...(schema.required ?? [])].sort(), props.sort(), `${path}: not every property is required`);
        for (const [k, v] of Object.entries(schema.properties ?? {})) assertStrictSchema(v, `${path}/${k}`);
    }
    if (schema.items) assertStrictSchema(schema.items, `${path}/items`);
    for (const key of ['anyOf', 'oneOf', 'allOf']) {
        for (const [i, branch] of (schema[key] ?? []).entries()) assertStrictSchema(branch, `${path}/${key}/${i}`);
    }
}

/** The arguments a strict-mode model sends: every property, null unless given. */
function strictArguments(tool, given) {
    const out = {};
    for (const name of Object.keys(tool.parameters.properties)) out[name] = given[name] ?? null;
    return JSON.stringify(out);
}

/** The text a function call's output carries, whatever form the SDK gave it. */
function outputText(output) {
    if (typeof output === 'string') return output;
    if (Array.isArray(output)) return output.map(outputText).join('\n');
    return output?.text ?? JSON.stringify(output);
}

/**
 * A Model that plays a script: each step gets the outputs of the tool calls
 * so far (by call id) and returns the next tool call { name, args } or the
 * final text { text }. requests keeps every request the SDK made.
 */
function scriptedModel(steps) {
    const requests = [];
    const outputs = new Map();
    let step = 0;
    return {
        requests,
        async getResponse(request) {
            requests.push(request);
            for (const item of Array.isArray(request.input) ? request.input : []) {
                if (item.type === 'function_call_result') outputs.set(item.callId, outputText(item.output));
            }
            const next = steps[step](outputs, request);
            step++;
            const usage = new Usage();
            if (next.text !== undefined) {
                return { usage, output: [{ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: next.text }] }] };
            }
            const tool = request.tools.find((t) => t.name === next.name);
            assert.ok(tool, `${next.name} is not among the tools the SDK offers the model`);
            return {
                usage,
                output: [{ type: 'function_call', callId: `call_${step}`, name: next.name, arguments: strictArguments(tool, next.args), status: 'completed' }],
            };
        },
        // eslint-disable-next-line require-yield
        async *getStreamedResponse() {
            throw new Error('the scripted model does not stream');
        },
    };
}

/** The structured result in a tool output's JSON text block. */
function resultIn(text) {
    const json = text.split('\n').reverse().find((l) => l.startsWith('{'));
    assert.ok(json, `no JSON result in ${text.slice(0, 2000)}`);
    return JSON.parse(json);
}

for (const transport of ['stdio', 'http']) {
    describe(`OpenAI Agents SDK over ${transport}`, () => {
        const http = httpServerFor(transport);
        // Nested, so that the client closes before the HTTP server stops.
        describe('an Agent with the server as an MCP server, in strict mode', () => {
            let mcp;
            let langs;
            before(async () => {
                mcp = transport === 'stdio'
                    ? new MCPServerStdio({ name: 'code-runner', command: BIN, args: ['serve', '--log-level', 'warn'], env: serverEnv(), clientSessionTimeoutSeconds: 120 })
                    : new MCPServerStreamableHttp({ name: 'code-runner', url: http.server.url, clientSessionTimeoutSeconds: 120 });
                await mcp.connect();
                if (transport === 'stdio') addServerPid(mcp.underlying?.transport?.pid);
                const list = JSON.parse(outputText(await mcp.callTool('list_languages', {})));
                langs = new Map(list.languages.map((l) => [l.name, l]));
            });
            after(async () => {
                await mcp?.close();
            });

            it('converts all 15 tools in strict mode, each to a schema the API accepts in strict mode', async () => {
                const agent = new Agent({ name: 'runner', mcpServers: [mcp], mcpConfig: { convertSchemasToStrict: true } });
                const tools = await agent.getAllTools(new RunContext());
                assert.deepEqual(tools.map((t) => t.name).sort(), TOOLS);
                for (const tool of tools) {
                    assert.equal(tool.strict, true, `${tool.name} fell back to a non-strict schema`);
                    assertStrictSchema(tool.parameters, '');
                }
                const env = tools.find((t) => t.name === 'run_code').parameters.properties.env;
                assert.ok(JSON.stringify(env).includes('"name"'), `env is not advertised as name/value pairs: ${JSON.stringify(env)}`);
            });

            it('runs run_code with env through the Runner, called as a strict-mode model calls it', async (t) => {
                if (!needLanguage(t, langs, 'bash')) return;
                const model = scriptedModel([
                    () => ({ name: 'run_code', args: { language: 'bash', code: 'echo "$GREETING, $1"', args: ['world'], env: [{ name: 'GREETING', value: 'hello' }] } }),
                    (outputs) => ({ text: outputs.get('call_1') }),
                ]);
                const agent = new Agent({ name: 'runner', model, mcpServers: [mcp], mcpConfig: { convertSchemasToStrict: true } });
                const result = await new Runner({ tracingDisabled: true }).run(agent, 'say hello', { maxTurns: 4 });
                const sent = model.requests[0].tools.find((x) => x.name === 'run_code');
                assert.equal(sent.strict, true, 'run_code was not offered to the model in strict mode');
                const r = resultIn(result.finalOutput);
                assert.equal(r.status, 'ok', result.finalOutput);
                assert.equal(r.stdout, 'hello, world\n', result.finalOutput);
            });

            it('runs start_execution with env and waits with get_execution, called as a strict-mode model calls them', async (t) => {
                if (!needLanguage(t, langs, 'bash')) return;
                const model = scriptedModel([
                    () => ({ name: 'start_execution', args: { language: 'bash', code: 'echo "$A-$B"', env: [{ name: 'A', value: 'one' }, { name: 'B', value: 'two' }] } }),
                    (outputs) => ({ name: 'get_execution', args: { execution_id: resultIn(outputs.get('call_1')).execution_id, wait_seconds: 60 } }),
                    (outputs) => ({ text: outputs.get('call_2') }),
                ]);
                const agent = new Agent({ name: 'runner', model, mcpServers: [mcp], mcpConfig: { convertSchemasToStrict: true } });
                const result = await new Runner({ tracingDisabled: true }).run(agent, 'start it', { maxTurns: 5 });
                const done = resultIn(result.finalOutput);
                assert.equal(done.status, 'finished', result.finalOutput);
                assert.equal(done.result?.stdout, 'one-two\n', result.finalOutput);
            });
        });
    });
}

after(() => assertNoLeftoverContainers());
