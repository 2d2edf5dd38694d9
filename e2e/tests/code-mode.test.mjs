// Code mode through the official TypeScript client: sandbox code calls the
// tools of real MCP servers from npm (pinned in package.json), which the
// server starts and brokers. A Python program adds up 20 files it reads
// through @modelcontextprotocol/server-filesystem (stdio) and still has no
// network; JavaScript reads one with require and with import, TypeScript
// with the generated types; a run not granted a server is refused saying
// how it is granted, and a call of a server the run was not given raises;
// @modelcontextprotocol/server-everything is called over Streamable HTTP.
// Hostile cases: a result over the cap, a result crafted to look like the
// agent's frames, a flood of calls.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';

import { Client as Client1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as StdioClientTransport1 } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

import { BIN, ERAS, connect2, startHttpServer, structured, texts, freePort, waitFor, serverEnv, addServerPid, assertNoLeftoverContainers } from '../lib/harness.mjs';

const CALL = { timeout: 180000 };
const require = createRequire(import.meta.url);
const FS_SERVER = require.resolve('@modelcontextprotocol/server-filesystem/dist/index.js');
const EVERYTHING_SERVER = require.resolve('@modelcontextprotocol/server-everything/dist/index.js');

describe('code mode: sandbox code calls MCP servers through the server', () => {
    let dir;
    let conn;
    let everything;
    before(async () => {
        dir = mkdtempSync(join(tmpdir(), 'mcr-code-mode-'));
        for (let i = 1; i <= 20; i++) writeFileSync(join(dir, `n${i}.txt`), `${i}\n`);
        writeFileSync(join(dir, 'big.txt'), 'x'.repeat(300 * 1024));
        // Bytes that would be frames (a Done) and answer lines if anything
        // read the result as anything but JSON in a frame.
        writeFileSync(join(dir, 'crafted.txt'), 'D\u0000\u0000\u0000\u0000\u0002{}\n{"result":{"content":[]}}\nT\u0000\u0000\u0000\u0000\u0000\r\n\u2028end');
        // A port taken between freePort() and the server's listen: another.
        let port;
        for (let attempt = 1; !everything; attempt++) {
            port = await freePort();
            const proc = spawn('node', [EVERYTHING_SERVER, 'streamableHttp'], { env: { ...process.env, PORT: String(port) }, stdio: ['ignore', 'ignore', 'pipe'] });
            let exited = false;
            let stderr = '';
            proc.stderr.on('data', (d) => { stderr += d; });
            proc.on('exit', () => { exited = true; });
            // It says it listens before it tries to, so an answer is awaited.
            const answers = () => fetch(`http://127.0.0.1:${port}/mcp`, { signal: AbortSignal.timeout(2000) }).then(() => true, () => false);
            let listening = false;
            await waitFor(async () => exited || (listening = await answers()), 60000, 'the everything server listening');
            if (listening && !exited) everything = proc;
            else if (attempt === 3 || !/already in use/.test(stderr)) assert.fail(`the everything server did not start: ${stderr}`);
        }
        const config = join(dir, 'config.json');
        writeFileSync(config, JSON.stringify({
            code_mode: {
                servers: {
                    fs: { command: 'node', args: [FS_SERVER, dir] },
                    everything: { url: `http://127.0.0.1:${port}/mcp` },
                    theirs: { command: 'node', args: [FS_SERVER, dir] },
                },
                grants: [
                    { principals: ['*'], servers: ['fs', 'everything'] },
                    { principals: ['someone-else'], servers: ['theirs'] },
                ],
                max_result_bytes: 100 * 1024,
                calls_per_minute: 120,
            },
        }));
        conn = await connect2({ transport: 'stdio', args: ['--config', config] });
    });
    after(async () => {
        await conn?.close();
        everything?.kill();
        await assertNoLeftoverContainers();
    });

    const run = async (args) => conn.client.callTool({ name: 'run_code', arguments: args }, undefined, CALL);
    const ok = async (args) => {
        const r = structured(await run(args));
        assert.equal(r.exit_code, 0, JSON.stringify(r));
        return r;
    };

    it('a Python program adds up 20 files it read through the filesystem server, with no network', async () => {
        const r = await ok({
            language: 'python', tools: ['fs'], code: `
import socket, mcr_tools
total = sum(int(mcr_tools.fs.read_text_file(path=f"${dir}/n{i}.txt")["content"][0]["text"]) for i in range(1, 21))
print("total", total)
try:
    socket.create_connection(("127.0.0.1", 1), timeout=2)
    print("network")
except OSError:
    print("no network")
print(sorted(socket.if_nameindex()))
`,
        });
        assert.match(r.stdout, /^total 210\nno network\n\[\(1, 'lo'\)\]\n$/);
    });

    it('a JavaScript program reads a file with require and with import; TypeScript type-checks the generated module', async () => {
        let r = await ok({
            language: 'javascript', tools: ['fs'],
            code: `const { read_text_file } = require("mcr-tools/fs");\nconst { call } = require("mcr-tools");\nPromise.all([read_text_file({ path: "${dir}/n7.txt" }), call("fs", "read_text_file", { path: "${dir}/n6.txt" })]).then((rs) => console.log(rs.map((r) => r.content[0].text.trim()).join(" ")));`,
        });
        assert.equal(r.stdout, '7 6\n');
        r = await ok({
            language: 'javascript', tools: ['fs'],
            code: `import { call } from "mcr-tools";\nconst r = await call("fs", "read_text_file", { path: "${dir}/n8.txt" });\nconsole.log(r.content[0].text.trim());`,
        });
        assert.equal(r.stdout, '8\n');
        r = await ok({
            language: 'typescript', tools: ['fs'],
            code: `import { read_text_file } from "mcr-tools/fs";\nasync function main(): Promise<void> {\n  const r = await read_text_file({ path: "${dir}/n9.txt" });\n  const text: string = r.content[0].text ?? "";\n  console.log(text.trim(), r.isError ?? false);\n}\nmain();`,
        });
        assert.equal(r.stdout, '9 false\n');
        assert.equal(r.type_errors ?? 0, 0, r.compile?.stderr);
    });

    it('a run is refused a server its principal is not granted, saying how it is granted', async () => {
        const r = await run({ language: 'python', code: 'print(1)', tools: ['theirs'] });
        assert.ok(r.isError, JSON.stringify(r));
        assert.match(texts(r).join('\n'), /MCP server "theirs" is not granted to principal "local".*code_mode\.grants/);
    });

    it('a call of a server the run was not given raises ToolError naming it', async () => {
        const r = await ok({
            language: 'python', tools: ['fs'], code: `
import mcr_tools
try:
    mcr_tools.call("everything", "echo", {"message": "hi"})
except mcr_tools.ToolError as e:
    print("refused:", e)
`,
        });
        assert.match(r.stdout, /refused: this run was not given MCP server "everything" \(it was given fs\); name it in tools/);
    });

    it('the everything server is called over Streamable HTTP, its output schema typing structuredContent in TypeScript', async () => {
        let r = await ok({ language: 'python', tools: ['everything'], code: 'import mcr_tools\nr = mcr_tools.everything.echo(message="over http")\nprint(r["content"][0]["text"], r["isError"], r["structuredContent"])' });
        assert.equal(r.stdout, 'Echo: over http False None\n');
        r = await ok({
            language: 'typescript', tools: ['everything'],
            code: `import { get_structured_content, get_sum } from "mcr-tools/everything";
async function main(): Promise<void> {
  const weather = await get_structured_content({ location: "Chicago" });
  const celsius: number = weather.structuredContent?.temperature ?? NaN;
  const sum = await get_sum({ a: 2, b: 3 });
  console.log(typeof celsius, sum.content[0].text);
}
main();`,
        });
        assert.equal(r.type_errors ?? 0, 0, r.compile?.stderr);
        assert.match(r.stdout, /^number .*5/);
    });

    it('a session given tools keeps calling them through pause, resume and fork; its calls cannot name other tools', async () => {
        const call = async (name, args) => structured(await conn.client.callTool({ name, arguments: args }, undefined, CALL));
        const session = await call('create_session', { language: 'python', tools: ['fs'] });
        assert.deepEqual(session.tools, ['fs']);
        const id = session.session_id;
        let r = await ok({ language: 'python', session_id: id, code: `import mcr_tools\nseen = [mcr_tools.fs.read_text_file(path="${dir}/n3.txt")["content"][0]["text"].strip()]\nseen` });
        assert.equal(r.value, "['3']");
        const refused = await run({ language: 'python', session_id: id, code: '1', tools: ['everything'] });
        assert.ok(refused.isError);
        assert.match(texts(refused).join('\n'), /session's tools are chosen when it is created/);
        await call('pause_session', { session_id: id });
        // Resumed: the cell that called the tool is replayed (it calls it again), then this one calls another.
        r = await ok({ language: 'python', session_id: id, code: `seen.append(mcr_tools.fs.read_text_file(path="${dir}/n4.txt")["content"][0]["text"].strip())\nseen` });
        assert.equal(r.value, "['3', '4']");
        assert.equal(r.resumed?.cause, 'paused');
        const fork = await call('fork_session', { session_id: id });
        const forkID = fork.session.session_id;
        r = await ok({ language: 'python', session_id: forkID, code: `seen.append(mcr_tools.call("fs", "read_text_file", {"path": "${dir}/n5.txt"})["content"][0]["text"].strip())\nseen` });
        assert.equal(r.value, "['3', '4', '5']");
        await call('close_session', { session_id: forkID });
        await call('close_session', { session_id: id });
    });

    it('discovery: mcr://apis lists the granted servers, mcr://apis/<server>/<tool> gives one signature', async () => {
        const list = (await conn.client.readResource({ uri: 'mcr://apis' })).contents[0].text;
        assert.match(list, /## fs\n/);
        assert.doesNotMatch(list, /## theirs/);
        const one = (await conn.client.readResource({ uri: 'mcr://apis/fs/read_text_file' })).contents[0].text;
        assert.match(one, /def read_text_file\(\*, path: str, head: float \| None = None, tail: float \| None = None\) -> dict:/);
        assert.match(one, /export function read_text_file\(args: \{ path: string; head\?: number; tail\?: number \}\)/);
        await assert.rejects(conn.client.readResource({ uri: 'mcr://apis/theirs' }));
    });

    // Last: the flood spends the principal's calls for the minute.
    it('hostile: a result over the cap is refused, a result shaped like frames arrives intact, a flood is cut', async () => {
        // 200 calls: the default 10 s of a run is too close on a loaded machine.
        const r = await ok({
            language: 'python', tools: ['fs'], timeout_seconds: 60, code: `
import mcr_tools
try:
    mcr_tools.fs.read_text_file(path="${dir}/big.txt")
except mcr_tools.ToolError as e:
    print("big:", e)
text = mcr_tools.fs.read_text_file(path="${dir}/crafted.txt")["content"][0]["text"]
print("crafted:", ascii(text))
limited = 0
for i in range(200):
    try:
        mcr_tools.fs.list_allowed_directories()
    except mcr_tools.ToolError as e:
        limited += "a minute per principal" in str(e)
print("limited", limited > 0)
`,
        });
        assert.match(r.stdout, /big: the result of fs\.read_text_file is \d+ bytes, over the 102400 bytes/);
        assert.ok(r.stdout.includes(String.raw`crafted: 'D\x00\x00\x00\x00\x02{}\n{"result":{"content":[]}}\nT\x00\x00\x00\x00\x00\r\n\u2028end'`), r.stdout);
        assert.match(r.stdout, /limited True/);
    });
});

// The operator's side: approval through elicitation (the 2025 era's
// request, with the 1.x client most hosts embed), credentials that reach
// the upstream but never the sandbox, start_execution, the audit line.
describe('code mode: approval, credentials, executions, audit', () => {
    let dir;
    let client;
    let answer = 'accept';
    let asked = [];
    const TOKEN = 'upstream-token-e2e-7f3a91';
    before(async () => {
        dir = mkdtempSync(join(tmpdir(), 'mcr-code-mode-ops-'));
        writeFileSync(join(dir, 'a.txt'), 'alpha\n');
        const config = join(dir, 'config.json');
        writeFileSync(config, JSON.stringify({
            code_mode: {
                servers: {
                    fs: { command: 'node', args: [FS_SERVER, dir], approval: 'tools', approval_tools: ['read_text_file'] },
                    everything: { command: 'node', args: [EVERYTHING_SERVER, 'stdio'], env: { UPSTREAM_TOKEN: '{env:MCR_E2E_UPSTREAM_TOKEN}' } },
                },
            },
        }));
        client = new Client1({ name: 'mcr-e2e-code-mode', version: '1.0.0' }, { capabilities: { elicitation: {} } });
        client.setRequestHandler(ElicitRequestSchema, (req) => {
            asked.push(req.params.message);
            return answer === 'accept' ? { action: 'accept', content: { allow: true } } : { action: answer };
        });
        const env = { ...serverEnv(), MCR_E2E_UPSTREAM_TOKEN: TOKEN };
        const t = new StdioClientTransport1({ command: BIN, args: ['serve', '--config', config, '--audit-log', join(dir, 'audit.log')], env, stderr: 'ignore' });
        await client.connect(t, { timeout: 30000 });
        addServerPid(t.pid);
    });
    after(async () => {
        await client?.close();
        await assertNoLeftoverContainers();
    });

    const ok = async (args) => {
        const r = structured(await client.callTool({ name: 'run_code', arguments: args }, undefined, CALL));
        assert.equal(r.exit_code, 0, JSON.stringify(r));
        return r;
    };
    const readTwice = `
import mcr_tools
for _ in range(2):
    try:
        print(mcr_tools.fs.read_text_file(path="${'${DIR}'}/a.txt")["content"][0]["text"].strip())
    except mcr_tools.ToolError as e:
        print("refused:", e)
print(len(mcr_tools.fs.list_allowed_directories()["content"]))
`;

    it('a tool marked for approval asks the user once per run; a declined call is refused', async () => {
        answer = 'accept';
        asked = [];
        let r = await ok({ language: 'python', tools: ['fs'], code: readTwice.replaceAll('${DIR}', dir) });
        assert.equal(r.stdout, 'alpha\nalpha\n1\n');
        assert.equal(asked.length, 1, asked.join('\n'));
        assert.match(asked[0], /the tool read_text_file of the MCP server fs/);
        answer = 'decline';
        asked = [];
        r = await ok({ language: 'python', tools: ['fs'], code: readTwice.replaceAll('${DIR}', dir) });
        assert.match(r.stdout, /^refused: the user declined the call of fs\.read_text_file\n/);
        assert.match(r.stdout, /\n1\n$/); // a tool not marked passes
    });

    it('in the 2026-07-28 era the result asks the user and the client runs it again with the answer', async () => {
        const server = await startHttpServer({ args: ['--config', join(dir, 'config.json')] });
        let prompts = [];
        let reply = 'accept';
        const modern = await connect2({
            transport: 'http', url: server.url, negotiation: ERAS[1].negotiation,
            capabilities: { elicitation: { form: {} } },
            setup: (c) => c.setRequestHandler('elicitation/create', (req) => {
                prompts.push(req.params.message);
                return reply === 'accept' ? { action: 'accept', content: { allow: true } } : { action: reply };
            }),
        });
        try {
            assert.equal(modern.client.getNegotiatedProtocolVersion(), '2026-07-28');
            const go = async () => structured(await modern.client.callTool({ name: 'run_code', arguments: { language: 'python', tools: ['fs'], code: readTwice.replaceAll('${DIR}', dir) } }, CALL));
            let r = await go();
            assert.equal(r.stdout, 'alpha\nalpha\n1\n');
            assert.equal(prompts.length, 1, prompts.join('\n'));
            assert.match(prompts[0], /the tool read_text_file of the MCP server fs/);
            prompts = [];
            reply = 'decline';
            r = await go();
            assert.match(r.stdout, /^refused: the user declined calls of fs\/read_text_file\n/);
            assert.equal(prompts.length, 1);
            // A session's call cannot be asked about in this era: refused,
            // saying what the user can do instead; an execution's neither.
            prompts = [];
            const session = structured(await modern.client.callTool({ name: 'create_session', arguments: { language: 'python', tools: ['fs'] } }, CALL));
            r = structured(await modern.client.callTool({ name: 'run_code', arguments: { language: 'python', session_id: session.session_id, code: readTwice.replaceAll('${DIR}', dir) } }, CALL));
            assert.match(r.stdout, /^refused: calls of fs\/read_text_file need the user's approval, which could not be asked: in the 2026-07-28 protocol era .*make these calls from a one-shot run_code/);
            assert.equal(prompts.length, 0);
            await modern.client.callTool({ name: 'close_session', arguments: { session_id: session.session_id } }, CALL);
            let e = structured(await modern.client.callTool({ name: 'start_execution', arguments: { language: 'python', tools: ['fs'], code: readTwice.replaceAll('${DIR}', dir) } }, CALL));
            for (let i = 0; i < 3 && (i === 0 || e.status === 'running'); i++) {
                e = structured(await modern.client.callTool({ name: 'get_execution', arguments: { execution_id: e.execution_id, wait_seconds: 60 } }, CALL));
            }
            assert.match(e.stdout, /^refused: calls of fs\/read_text_file need the user's approval .*as start_execution's is not\); run the code with run_code/);
        } finally {
            await modern.close();
            const exit = await server.stop();
            assert.deepEqual(exit, { code: 0, signal: null }, server.logs());
        }
    });

    it("the upstream's credential reaches it and never the sandbox", async () => {
        const r = await ok({
            language: 'python', tools: ['everything'], code: `
import json, os, mcr_tools
upstream = json.loads(mcr_tools.everything.get_env()["content"][0]["text"])
print(upstream.get("UPSTREAM_TOKEN") == ${JSON.stringify(TOKEN)})
leaks = [k for k, v in os.environ.items() if ${JSON.stringify(TOKEN)} in v]
for root, _, files in os.walk("/tmp"):
    for f in files:
        try:
            leaks += [f] if ${JSON.stringify(TOKEN)} in open(os.path.join(root, f), errors="ignore").read() else []
        except OSError:
            pass
print(leaks)
`,
        });
        assert.equal(r.stdout, 'True\n[]\n');
    });

    it('start_execution takes tools', async () => {
        let s = structured(await client.callTool({ name: 'start_execution', arguments: { language: 'python', tools: ['everything'], code: 'import mcr_tools\nprint(mcr_tools.everything.echo(message="later")["content"][0]["text"])' } }, undefined, CALL));
        // A loaded machine may take longer than one wait (at most 60 s).
        for (let i = 0; i < 3 && (i === 0 || s.status === 'running'); i++) {
            s = structured(await client.callTool({ name: 'get_execution', arguments: { execution_id: s.execution_id, wait_seconds: 60 } }, undefined, CALL));
        }
        assert.equal(s.status, 'finished', JSON.stringify(s));
        assert.equal(s.stdout, 'Echo: later\n');
    });

    it('each brokered call has an audit line without its arguments', async () => {
        const lines = readFileSync(join(dir, 'audit.log'), 'utf8').trim().split('\n').map((l) => JSON.parse(l)).filter((l) => l.event === 'tool_call');
        const echo = lines.find((l) => l.tool === 'echo');
        assert.ok(echo, JSON.stringify(lines));
        assert.equal(echo.principal, 'local');
        assert.equal(echo.server, 'everything');
        assert.equal(echo.status, 'ok');
        assert.ok(echo.run_id && echo.result_bytes > 0 && echo.arguments_bytes > 0 && echo.duration_ms >= 0, JSON.stringify(echo));
        assert.equal(echo.arguments, undefined);
        assert.ok(lines.some((l) => l.tool === 'read_text_file' && l.status === 'refused' && /declined/.test(l.error)));
    });
});

// A session given tools on the crun backend, where the checkpoint tools
// work (make checkpoint-tools; CI installs them): the pause checkpoints
// its sandbox (the agent's tools socket and the libraries with it) and the
// next call restores it exactly, and its program calls the server again
// from the restored process. Elsewhere the pause replays (tested above).
describe('code mode: a session with tools restored from a checkpoint', () => {
    let dir;
    let conn;
    before(async () => {
        dir = mkdtempSync(join(tmpdir(), 'mcr-code-mode-crun-'));
        for (const n of [1, 2]) writeFileSync(join(dir, `n${n}.txt`), `${n}\n`);
        const config = join(dir, 'config.json');
        writeFileSync(config, JSON.stringify({ code_mode: { servers: { fs: { command: 'node', args: [FS_SERVER, dir] } } } }));
        conn = await connect2({ transport: 'stdio', args: ['--backend', 'crun', '--config', config] });
    });
    after(async () => {
        await conn?.close();
        const logs = conn?.logs() ?? '';
        if (/panic|level=ERROR/.test(logs)) console.log(logs);
    });

    it('keeps its memory and calls the server again after the restore', async (t) => {
        const call = async (name, args) => structured(await conn.client.callTool({ name, arguments: args }, undefined, CALL));
        const session = await call('create_session', { language: 'python', tools: ['fs'] });
        const id = session.session_id;
        try {
            const cell = (code) => call('run_code', { language: 'python', session_id: id, timeout_seconds: 60, code });
            const a = await cell(`import random, mcr_tools\nsecret = random.random()\nread = [mcr_tools.fs.read_text_file(path="${dir}/n1.txt")["content"][0]["text"].strip()]\n(secret, read)`);
            assert.equal(a.exit_code, 0, JSON.stringify(a));
            const p = await call('pause_session', { session_id: id });
            if (p.mode !== 'restored' && process.env.CI !== 'true') {
                assert.equal(p.mode, 'replayed', JSON.stringify(p));
                t.skip('no checkpoint tools on this host: the pause replays');
                return;
            }
            assert.equal(p.mode, 'restored', JSON.stringify(p));
            const b = await cell(`read.append(mcr_tools.fs.read_text_file(path="${dir}/n2.txt")["content"][0]["text"].strip())\n(secret, read)`);
            assert.equal(b.exit_code, 0, JSON.stringify(b));
            assert.equal(b.resumed?.mode, 'restored', JSON.stringify(b));
            assert.equal(b.resumed?.cells_replayed, 0, JSON.stringify(b));
            // The number drawn before the pause is back (no replay draws it
            // again), and the restored program's call was answered.
            assert.equal(b.value, a.value.replace("['1']", "['1', '2']"), JSON.stringify(b));
        } finally {
            await conn.client.callTool({ name: 'close_session', arguments: { session_id: id } });
        }
    });
});
