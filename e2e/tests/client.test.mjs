// The official TypeScript client (@modelcontextprotocol/client 2.x) against
// the real server binary, over stdio and Streamable HTTP, in both protocol
// eras: 2025-11-25 (initialize handshake) and 2026-07-28 (negotiated with
// versionNegotiation 'auto', which must pick the modern era).

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';

import {
    ERAS, connect2, httpServerFor, languages, needLanguage, runCode, show, texts,
    assertNoLeftoverContainers, containersOf, containersRunning, waitFor,
} from '../lib/harness.mjs';

const LANGS = ['bash', 'javascript', 'python', 'typescript'];

// The full stdout of `for i in range(100000): print(i)`.
const HUNDRED_K_LINES = Array.from({ length: 100000 }, (_, i) => `${i}\n`).join('');

for (const transport of ['stdio', 'http']) {
    describe(`over ${transport}`, () => {
        const http = httpServerFor(transport);

        it('negotiates 2026-07-28 with versionNegotiation pinned to it', async () => {
            const conn = await connect2({ transport, url: http.server?.url, negotiation: { mode: { pin: '2026-07-28' } } });
            try {
                assert.equal(conn.client.getProtocolEra(), 'modern');
                assert.equal(conn.client.getNegotiatedProtocolVersion(), '2026-07-28');
                const { tools } = await conn.client.listTools();
                assert.ok(tools.some((t) => t.name === 'run_code'));
            } finally {
                await conn.close();
            }
        });

        for (const era of ERAS) {
            describe(`protocol ${era.name}`, () => {
                let conn;
                let client;
                let langs;
                before(async () => {
                    conn = await connect2({ transport, url: http.server?.url, negotiation: era.negotiation });
                    client = conn.client;
                    langs = await languages(client);
                });
                after(async () => {
                    await conn?.close();
                    const logs = conn?.logs() ?? '';
                    if (/panic|level=ERROR/.test(logs)) console.log(logs);
                });

                it(`negotiates the ${era.era} era`, () => {
                    assert.equal(client.getProtocolEra(), era.era);
                    assert.equal(client.getNegotiatedProtocolVersion(), era.version);
                    const info = client.getServerVersion();
                    assert.equal(info?.name, 'mcp-code-runner');
                    const caps = client.getServerCapabilities();
                    assert.ok(caps?.tools, 'tools capability');
                    assert.ok(caps?.resources, 'resources capability');
                    assert.ok(caps?.prompts, 'prompts capability');
                    assert.ok(caps?.completions, 'completions capability');
                });

                it('lists run_code and list_languages with schemas and annotations', async () => {
                    const { tools } = await client.listTools();
                    const byName = new Map(tools.map((t) => [t.name, t]));
                    const run = byName.get('run_code');
                    const list = byName.get('list_languages');
                    assert.ok(run, 'run_code listed');
                    assert.ok(list, 'list_languages listed');

                    assert.equal(run.inputSchema.type, 'object');
                    for (const p of ['language', 'code', 'stdin', 'args', 'env', 'files', 'timeout_seconds']) {
                        assert.ok(run.inputSchema.properties?.[p], `run_code input property ${p}`);
                    }
                    assert.deepEqual([...(run.inputSchema.required ?? [])].sort(), ['code', 'language']);
                    assert.equal(run.outputSchema?.type, 'object', 'run_code outputSchema');
                    for (const p of ['run_id', 'language', 'status', 'exit_code', 'timed_out', 'oom_killed', 'stdout', 'stderr',
                        'stdout_truncated', 'stderr_truncated', 'stdout_uri', 'stderr_uri', 'duration_ms', 'compile']) {
                        assert.ok(run.outputSchema.properties?.[p], `run_code output property ${p}`);
                    }
                    assert.ok(run.annotations, 'run_code annotations');
                    assert.equal(run.annotations.readOnlyHint ?? false, false);
                    assert.equal(run.annotations.destructiveHint, false);
                    assert.equal(run.annotations.openWorldHint, false);
                    assert.ok(run.description?.length > 50, 'run_code description');

                    assert.equal(list.inputSchema.type, 'object');
                    assert.equal(list.outputSchema?.type, 'object', 'list_languages outputSchema');
                    assert.ok(list.outputSchema.properties?.languages);
                    assert.ok(list.annotations, 'list_languages annotations');
                    assert.equal(list.annotations.readOnlyHint, true);
                    assert.equal(list.annotations.idempotentHint, true);
                    assert.equal(list.annotations.openWorldHint, false);

                    for (const t of tools) assert.match(t.name, /^[A-Za-z0-9_.-]{1,64}$/);
                });

                it('list_languages reports every language', () => {
                    for (const l of LANGS) {
                        const info = langs.get(l);
                        assert.ok(info, `${l} listed`);
                        assert.equal(typeof info.available, 'boolean');
                        if (info.available) assert.ok(info.runtime_version, `${l} has a runtime version`);
                    }
                    assert.equal(langs.get('typescript').compiled, true);
                    assert.equal(langs.get('python').compiled, false);
                });

                it('runs python hello world', async (t) => {
                    if (!needLanguage(t, langs, 'python')) return;
                    const r = await runCode(client, { language: 'python', code: "print('hello, world')" });
                    assert.equal(r.status, 'ok', show(r));
                    assert.equal(r.exit_code, 0, show(r));
                    assert.equal(r.stdout, 'hello, world\n', show(r));
                    assert.equal(r.stderr, '');
                    assert.equal(r.language, 'python');
                    assert.match(r.runtime_version, /Python 3\./);
                    assert.match(r.run_id, /^[A-Za-z0-9_-]+$/);
                    assert.equal(r.timed_out, false);
                    assert.equal(r.oom_killed, false);
                    assert.equal(r.stdout_truncated, false);
                    assert.equal(typeof r.duration_ms, 'number');
                    assert.equal(r.compile, undefined);
                });

                it('runs javascript reading stdin', async (t) => {
                    if (!needLanguage(t, langs, 'javascript')) return;
                    const code = `
let data = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (d) => { data += d; });
process.stdin.on('end', () => {
  const lines = data.split('\\n').filter(Boolean);
  console.log(lines.length + ' lines: ' + lines.map((l) => l.toUpperCase()).join(','));
});`;
                    const r = await runCode(client, { language: 'js', code, stdin: 'alpha\nbeta\ngamma\n' });
                    assert.equal(r.status, 'ok', show(r));
                    assert.equal(r.language, 'javascript');
                    assert.equal(r.stdout, '3 lines: ALPHA,BETA,GAMMA\n', show(r));
                    assert.match(r.runtime_version, /^v?\d+\./);
                });

                it('runs bash with args and reports a non-zero exit code', async (t) => {
                    if (!needLanguage(t, langs, 'bash')) return;
                    const r = await client.callTool({
                        name: 'run_code',
                        arguments: {
                            language: 'bash',
                            code: 'echo "$#:$1:$2"; echo "to stderr" >&2; exit 3',
                            args: ['two words', '--flag'],
                        },
                    });
                    // A program that fails is a successful tool call.
                    assert.ok(!r.isError, `isError for a non-zero exit: ${JSON.stringify(r)}`);
                    const s = r.structuredContent;
                    assert.equal(s.status, 'error', show(s));
                    assert.equal(s.exit_code, 3, show(s));
                    assert.equal(s.stdout, '2:two words:--flag\n', show(s));
                    assert.equal(s.stderr, 'to stderr\n', show(s));
                    assert.match(texts(r)[0], /exit code 3/);
                });

                it('reports typescript type errors and still runs the program', async (t) => {
                    if (!needLanguage(t, langs, 'typescript')) return;
                    const r = await runCode(client, {
                        language: 'typescript',
                        code: 'const n: number = "not a number";\nconsole.log(n);\n',
                    });
                    assert.equal(r.status, 'ok', show(r));
                    assert.equal(r.type_errors, 1, show(r));
                    assert.equal(r.compile?.exit_code, 0, show(r));
                    assert.match(r.compile.stderr, /TS2322/, show(r));
                    assert.equal(r.stdout, 'not a number\n', show(r));
                });

                it('reports a typescript syntax error as compile_error', async (t) => {
                    if (!needLanguage(t, langs, 'typescript')) return;
                    const r = await runCode(client, {
                        language: 'typescript',
                        code: 'const = ;\nconsole.log("ran");\n',
                    });
                    assert.equal(r.status, 'compile_error', show(r));
                    assert.ok(r.compile, `compile stage reported: ${show(r)}`);
                    assert.notEqual(r.compile.exit_code, 0, show(r));
                    assert.match(r.compile.stderr, /TS1134/, show(r));
                    assert.equal(r.stdout, '', 'the program did not run');
                });

                it('compiles and runs typescript', async (t) => {
                    if (!needLanguage(t, langs, 'typescript')) return;
                    const r = await runCode(client, {
                        language: 'ts',
                        code: 'const greet = (who: string): string => `hello, ${who}`;\nconsole.log(greet(process.argv[2] ?? "nobody"));\n',
                        args: ['typescript'],
                    });
                    assert.equal(r.status, 'ok', show(r));
                    assert.equal(r.language, 'typescript');
                    assert.equal(r.compile?.exit_code, 0, show(r));
                    assert.equal(r.compile.timed_out, false);
                    assert.equal(r.stdout, 'hello, typescript\n', show(r));
                    assert.match(r.runtime_version, /Version \d+\./);
                });

                it('kills a program at timeout_seconds', async (t) => {
                    if (!needLanguage(t, langs, 'python')) return;
                    const started = Date.now();
                    const r = await runCode(client, {
                        language: 'python',
                        code: "print('started', flush=True)\nwhile True:\n    pass\n",
                        timeout_seconds: 1,
                    });
                    const took = Date.now() - started;
                    assert.equal(r.timed_out, true, show(r));
                    assert.equal(r.status, 'timeout', show(r));
                    assert.notEqual(r.exit_code, 0, show(r));
                    assert.equal(r.stdout, 'started\n', `output up to the timeout is kept: ${show(r)}`);
                    assert.ok(r.duration_ms >= 900 && r.duration_ms < 5000, `duration_ms ${r.duration_ms}`);
                    assert.ok(took < 20000, `the call took ${took} ms`);
                });

                it('truncates output over the inline cap and serves it in full as a resource', async (t) => {
                    if (!needLanguage(t, langs, 'python')) return;
                    const r = await runCode(client, { language: 'python', code: 'for i in range(100000):\n    print(i)\n' });
                    assert.equal(r.status, 'ok', show({ ...r, stdout: r.stdout.slice(0, 200) }));
                    assert.equal(r.stdout_truncated, true);
                    assert.equal(r.stderr_truncated, false);
                    assert.ok(r.stdout.length < 64 * 1024, `inline stdout is ${r.stdout.length} bytes`);
                    assert.ok(r.stdout.startsWith('0\n1\n2\n'), 'inline stdout keeps the head');
                    assert.ok(r.stdout.endsWith('99998\n99999\n'), 'inline stdout keeps the tail');
                    assert.equal(r.stdout_bytes, HUNDRED_K_LINES.length);
                    assert.equal(r.stdout_uri, `mcr://runs/${r.run_id}/stdout`);
                    assert.ok(!r.stderr_uri, 'no stderr_uri');

                    const read = await client.readResource({ uri: r.stdout_uri });
                    assert.equal(read.contents.length, 1);
                    const c = read.contents[0];
                    assert.equal(c.uri, r.stdout_uri);
                    assert.equal(c.mimeType, 'text/plain');
                    assert.equal(c.text.length, HUNDRED_K_LINES.length);
                    assert.ok(c.text === HUNDRED_K_LINES, 'the resource holds the full stdout');
                });

                it('cancelling a call stops the run and removes its sandbox', async (t) => {
                    // Over HTTP in the 2025 era the SDK neither ties the handler to
                    // the POST nor can route notifications/cancelled (another
                    // POST, another stateless session); the server links each
                    // run to its POST itself, so closing it stops the run.
                    if (!needLanguage(t, langs, 'bash')) return;
                    const owner = conn.pid ?? http.server.proc.pid;
                    // A marker no other run uses, to find this run's sandbox.
                    const marker = `sleep 5${Math.floor(Math.random() * 10)}.${Date.now() % 100000}`;
                    const ac = new AbortController();
                    const call = client.callTool(
                        { name: 'run_code', arguments: { language: 'bash', code: `echo started; ${marker}`, timeout_seconds: 60 } },
                        { signal: ac.signal, timeout: 120000 },
                    ).then((r) => ({ r }), (e) => ({ e }));
                    let ids = [];
                    await waitFor(async () => (ids = await containersRunning(owner, marker)).length > 0, 20000, 'the run to start');
                    const started = Date.now();
                    ac.abort();
                    const out = await call;
                    assert.ok(out.e, `the call was aborted, got ${JSON.stringify(out.r)?.slice(0, 500)}`);
                    const gone = async () => {
                        const left = await containersOf(owner);
                        return ids.every((id) => !left.some((l) => id.startsWith(l) || l.startsWith(id)));
                    };
                    await waitFor(gone, 20000, `the sandbox ${ids} to be removed after the cancellation`);
                    const took = Date.now() - started;
                    assert.ok(took < 20000, `sandbox removed ${took} ms after the cancellation`);
                    // The connection still works.
                    const r = await runCode(client, { language: 'bash', code: 'echo after' });
                    assert.equal(r.stdout, 'after\n');
                });

                it('reading an unknown run output is an error', async () => {
                    await assert.rejects(client.readResource({ uri: 'mcr://runs/0000000000000000/stdout' }), (e) => {
                        assert.match(String(e?.message ?? e), /not found/i);
                        return true;
                    });
                });

                it('answers an unknown language with isError and the list of languages', async () => {
                    const r = await client.callTool({ name: 'run_code', arguments: { language: 'intercal', code: 'DO READ OUT #1' } });
                    assert.equal(r.isError, true, JSON.stringify(r));
                    const msg = texts(r).join('\n');
                    assert.match(msg, /unknown language "intercal"/);
                    for (const l of LANGS) assert.ok(msg.includes(l), `the message lists ${l}: ${msg}`);
                });

                it('answers empty code with isError', async () => {
                    const r = await client.callTool({ name: 'run_code', arguments: { language: 'python', code: '' } });
                    assert.equal(r.isError, true, JSON.stringify(r));
                    assert.match(texts(r).join('\n'), /code/);
                });

                it('lists prompts and gets solve_with_code', async () => {
                    const { prompts } = await client.listPrompts();
                    const byName = new Map(prompts.map((p) => [p.name, p]));
                    const solve = byName.get('solve_with_code');
                    assert.ok(solve, 'solve_with_code listed');
                    assert.ok(byName.get('test_code'), 'test_code listed');
                    const args = new Map(solve.arguments.map((a) => [a.name, a]));
                    assert.equal(args.get('task')?.required, true);
                    assert.ok(args.get('language'));

                    const got = await client.getPrompt({ name: 'solve_with_code', arguments: { task: 'sum the integers 1 to 10', language: 'py' } });
                    assert.ok(got.messages.length >= 1);
                    const m = got.messages[0];
                    assert.equal(m.role, 'user');
                    assert.equal(m.content.type, 'text');
                    assert.match(m.content.text, /sum the integers 1 to 10/);
                    assert.match(m.content.text, /"python"/);
                    assert.match(m.content.text, /run_code/);
                });

                it('completes the language argument of the prompts', async () => {
                    const py = await client.complete({ ref: { type: 'ref/prompt', name: 'solve_with_code' }, argument: { name: 'language', value: 'py' } });
                    assert.ok(py.completion.values.includes('python'), JSON.stringify(py));
                    assert.ok(py.completion.values.every((v) => v.startsWith('py')), JSON.stringify(py));
                    const ty = await client.complete({ ref: { type: 'ref/prompt', name: 'test_code' }, argument: { name: 'language', value: 'Ty' } });
                    assert.deepEqual(ty.completion.values, ['typescript']);
                    // Names and aliases together pass the 100 values a completion may
                    // carry: the first 100 come, with the total and hasMore.
                    const all = await client.complete({ ref: { type: 'ref/prompt', name: 'solve_with_code' }, argument: { name: 'language', value: '' } });
                    assert.equal(all.completion.values.length, Math.min(100, all.completion.total), JSON.stringify(all));
                    assert.equal(all.completion.hasMore, all.completion.total > 100, JSON.stringify(all));
                    assert.ok(all.completion.total >= 42, JSON.stringify(all));
                    for (const l of LANGS) {
                        const one = await client.complete({ ref: { type: 'ref/prompt', name: 'solve_with_code' }, argument: { name: 'language', value: l } });
                        assert.ok(one.completion.values.includes(l), `${l} in ${JSON.stringify(one)}`);
                    }
                });

                it('lists resources and templates and reads mcr://languages', async () => {
                    const { resources } = await client.listResources();
                    const langRes = resources.find((r) => r.uri === 'mcr://languages');
                    assert.ok(langRes, `mcr://languages listed in ${JSON.stringify(resources)}`);
                    assert.equal(langRes.mimeType, 'application/json');

                    const { resourceTemplates } = await client.listResourceTemplates();
                    const tpls = resourceTemplates.map((r) => r.uriTemplate);
                    for (const want of ['mcr://runs/{run_id}/{stream}', 'mcr://runs/{run_id}/compile/{stream}']) {
                        assert.ok(tpls.includes(want), `template ${want} in ${JSON.stringify(tpls)}`);
                    }

                    const read = await client.readResource({ uri: 'mcr://languages' });
                    assert.equal(read.contents.length, 1);
                    assert.equal(read.contents[0].mimeType, 'application/json');
                    const data = JSON.parse(read.contents[0].text);
                    const names = data.languages.map((l) => l.name);
                    for (const l of LANGS) assert.ok(names.includes(l), `${l} in mcr://languages`);
                });
            });
        }
    });
}

after(async () => {
    await assertNoLeftoverContainers();
});
