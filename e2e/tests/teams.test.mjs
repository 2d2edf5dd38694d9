// Isolation between the clients of one server (issue #14), over Streamable
// HTTP with the official TypeScript client (@modelcontextprotocol/client
// 2.x) in both protocol eras: tokens alice and bob each see and use only
// their own sessions, executions, outputs, artifacts and files, and cannot
// cancel each other's work; a third token with the operator role lists
// and cancels everyone's but reads no one's output; a request without a
// token is answered 401; one token at its quota leaves the others' runs
// unaffected; a token entry without a name stops the server at start-up.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { randomBytes } from 'node:crypto';

import {
    BIN, ERAS, connect2, serverEnv, startHttpServer, languages, needLanguage, structured, texts,
    assertNoLeftoverContainers, containersRunning, waitFor,
} from '../lib/harness.mjs';

const TOKENS = {
    alice: `alice-${randomBytes(12).toString('hex')}`,
    bob: `bob-${randomBytes(12).toString('hex')}`,
    ops: `ops-${randomBytes(12).toString('hex')}`,
};
const CALL_MS = 120000;
const NO_SESSION = 'sess-0000000000000000';
const NO_EXECUTION = 'exec-0000000000000000';

function call(client, name, args, opts = {}) {
    return client.callTool({ name, arguments: args }, { timeout: CALL_MS, ...opts });
}

async function ok(client, name, args) {
    return structured(await call(client, name, args));
}

/**
 * Asserts that a call about another principal's id gets, word for word,
 * the error a call about an id that does not exist gets.
 */
async function assertSameAsMissing(client, name, args, key, missingId, what) {
    const id = args[key];
    const got = await call(client, name, args);
    const missing = await call(client, name, { ...args, [key]: missingId });
    assert.equal(got.isError, true, `${what}: not an error: ${JSON.stringify(got).slice(0, 1500)}`);
    assert.equal(missing.isError, true, `${what}: the missing id is not an error`);
    assert.equal(texts(got).join('\n'), texts(missing).join('\n').replaceAll(missingId, id), `${what}: the answer differs from a missing id's`);
}

/** The error of reading uri, with the URI taken out. */
async function readError(client, uri) {
    try {
        const r = await client.readResource({ uri });
        assert.fail(`${uri} is readable: ${JSON.stringify(r).slice(0, 500)}`);
    } catch (e) {
        if (e?.code === 'ERR_ASSERTION') throw e;
        return `${e?.code} ${String(e?.message ?? e).replaceAll(uri, 'URI')}`;
    }
}

/** Records the JSON-RPC ids of the tools/call requests a client sends. */
function callIds(client) {
    const ids = [];
    const tr = client.transport;
    const send = tr.send.bind(tr);
    tr.send = (msg, opts) => {
        if (msg?.method === 'tools/call') ids.push(msg.id);
        return send(msg, opts);
    };
    return ids;
}

/** Posts notifications/cancelled for requestId with token, as any client could. */
async function postCancel(url, token, requestId) {
    const res = await fetch(url, {
        method: 'POST',
        headers: {
            'Content-Type': 'application/json',
            Accept: 'application/json, text/event-stream',
            'MCP-Protocol-Version': '2025-11-25',
            Authorization: `Bearer ${token}`,
        },
        body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId, reason: 'not yours' } }),
    });
    await res.text();
    return res.status;
}

describe('bad token entries stop the server at start-up', () => {
    for (const [what, entries, re] of [
        ['a token without a name', `=${TOKENS.alice}`, /empty name/],
        ['two tokens of one name', `ci=${TOKENS.alice},ci=${TOKENS.bob}`, /"ci" is given twice/],
    ]) {
        it(what, async () => {
            const proc = spawn(BIN, ['serve', '--http', '127.0.0.1:0', '--http-auth-tokens', entries], { env: serverEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
            let err = '';
            proc.stderr.setEncoding('utf8');
            proc.stderr.on('data', (d) => { err += d; });
            const [code] = await once(proc, 'exit');
            assert.notEqual(code, 0, 'the server started');
            assert.match(err, re);
            assert.ok(!err.includes(TOKENS.alice) && !err.includes(TOKENS.bob), `the error shows a token: ${err}`);
        });
    }
});

describe('two tokens and an operator over HTTP', () => {
    let server;
    before(async () => {
        server = await startHttpServer({
            args: [
                '--http-auth-tokens', `alice=${TOKENS.alice},bob=${TOKENS.bob},ops=${TOKENS.ops}`,
                '--http-operators', 'ops',
                '--quotas-concurrent-runs', '1',
                '--inline-output-bytes', '64',
            ],
        });
    });
    after(async () => {
        const exit = await server.stop();
        assert.deepEqual(exit, { code: 0, signal: null }, `the server did not exit cleanly\n${server.logs()}`);
        for (const t of Object.values(TOKENS)) {
            assert.ok(!server.logs().includes(t), 'a token appears in the server log');
        }
        await assertNoLeftoverContainers();
    });

    it('answers a request without a token with 401', async () => {
        const res = await fetch(server.url, {
            method: 'POST',
            headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
            body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } } }),
        });
        assert.equal(res.status, 401);
        await res.text();
    });

    for (const era of ERAS) {
        describe(`protocol ${era.name}`, () => {
            let alice, bob, ops, langs;
            before(async () => {
                const as = (name) => connect2({ transport: 'http', url: server.url, negotiation: era.negotiation, token: TOKENS[name], name: `teams-${name}` });
                [alice, bob, ops] = await Promise.all([as('alice'), as('bob'), as('ops')]);
                langs = await languages(alice.client);
            });
            after(async () => {
                await Promise.all([alice, bob, ops].map((c) => c?.close()));
            });

            it('keeps outputs and artifacts to their owner', async (t) => {
                if (!needLanguage(t, langs, 'bash')) return;
                const r = await ok(alice.client, 'run_code', { language: 'bash', code: 'seq 1 500; echo alice-file > out.txt' });
                assert.ok(r.stdout_truncated && r.stdout_uri, `want a truncated stdout: ${JSON.stringify(r).slice(0, 800)}`);
                const art = r.artifacts?.find((a) => a.path === 'out.txt');
                assert.ok(art?.uri, 'want out.txt as an artifact');
                for (const uri of [r.stdout_uri, art.uri]) {
                    const own = await alice.client.readResource({ uri });
                    assert.ok(own.contents[0].text.length > 0, `alice reads her own ${uri}`);
                    const missing = await readError(bob.client, uri.replace(r.run_id, '0000000000000000'));
                    assert.equal(await readError(bob.client, uri), missing, `bob reading alice's ${uri}`);
                    assert.equal(await readError(ops.client, uri), missing, `the operator reading alice's ${uri}`);
                }
            });

            it('keeps sessions and their files to their owner', async (t) => {
                if (!needLanguage(t, langs, 'bash')) return;
                const s = await ok(alice.client, 'create_session', { language: 'bash' });
                const id = s.session_id;
                await ok(alice.client, 'write_file', { session_id: id, path: 'secret.txt', content: 'alice secret' });
                await assertSameAsMissing(bob.client, 'read_file', { session_id: id, path: 'secret.txt' }, 'session_id', NO_SESSION, 'bob reads alice\'s file');
                await assertSameAsMissing(bob.client, 'write_file', { session_id: id, path: 'secret.txt', content: 'bob' }, 'session_id', NO_SESSION, 'bob writes alice\'s file');
                await assertSameAsMissing(bob.client, 'list_files', { session_id: id }, 'session_id', NO_SESSION, 'bob lists alice\'s files');
                await assertSameAsMissing(bob.client, 'run_code', { session_id: id, code: 'cat secret.txt' }, 'session_id', NO_SESSION, 'bob runs code in alice\'s session');
                await assertSameAsMissing(bob.client, 'close_session', { session_id: id }, 'session_id', NO_SESSION, 'bob closes alice\'s session');
                await assertSameAsMissing(ops.client, 'read_file', { session_id: id, path: 'secret.txt' }, 'session_id', NO_SESSION, 'the operator reads alice\'s file');
                assert.deepEqual((await ok(bob.client, 'list_sessions', {})).sessions, [], 'bob lists no session');
                const mine = (await ok(alice.client, 'list_sessions', {})).sessions;
                assert.deepEqual(mine.map((x) => [x.session_id, x.owner]), [[id, undefined]], 'alice lists hers, without owners');
                const all = (await ok(ops.client, 'list_sessions', {})).sessions;
                assert.deepEqual(all.map((x) => [x.session_id, x.owner]), [[id, 'alice']], 'the operator lists alice\'s with its owner');
                const f = await ok(alice.client, 'read_file', { session_id: id, path: 'secret.txt' });
                assert.equal(f.content, 'alice secret', 'alice\'s file is untouched');
                const closed = await ok(ops.client, 'close_session', { session_id: id });
                assert.equal(closed.owner, 'alice');
                assert.deepEqual((await ok(alice.client, 'list_sessions', {})).sessions, [], 'the operator closed alice\'s session');
            });

            it('keeps executions to their owner; the quota of one leaves the other unaffected; the operator cancels', async (t) => {
                if (!needLanguage(t, langs, 'bash')) return;
                const x = await ok(alice.client, 'start_execution', { language: 'bash', code: 'echo started; sleep 300', timeout_seconds: 600 });
                const id = x.execution_id;
                await assertSameAsMissing(bob.client, 'get_execution', { execution_id: id }, 'execution_id', NO_EXECUTION, 'bob reads alice\'s execution');
                await assertSameAsMissing(bob.client, 'cancel_execution', { execution_id: id }, 'execution_id', NO_EXECUTION, 'bob cancels alice\'s execution');
                await assertSameAsMissing(ops.client, 'get_execution', { execution_id: id }, 'execution_id', NO_EXECUTION, 'the operator reads alice\'s execution');
                assert.deepEqual((await ok(bob.client, 'list_executions', {})).executions, [], 'bob lists no execution');
                const all = (await ok(ops.client, 'list_executions', {})).executions;
                assert.ok(all.some((e) => e.execution_id === id && e.owner === 'alice'), `the operator lists alice's: ${JSON.stringify(all)}`);
                assert.equal((await ok(alice.client, 'get_execution', { execution_id: id })).status, 'running', 'alice\'s execution survives bob');

                // Alice's one run slot is her execution's: over quota. Bob runs.
                const over = await call(alice.client, 'run_code', { language: 'bash', code: 'echo more' });
                assert.equal(over.isError, true, JSON.stringify(over).slice(0, 800));
                assert.match(texts(over).join('\n'), /quota.*quotas\.concurrent_runs/s);
                const b = await ok(bob.client, 'run_code', { language: 'bash', code: 'echo bob' });
                assert.equal(b.stdout, 'bob\n');

                const c = await ok(ops.client, 'cancel_execution', { execution_id: id });
                assert.equal(c.status, 'cancelled');
                assert.equal(c.owner, 'alice');
                assert.equal(c.stdout, '', `the operator sees alice's output: ${JSON.stringify(c)}`);
                assert.equal(c.result, undefined, `the operator sees alice's result: ${JSON.stringify(c)}`);
            });

            it('does not let bob\'s notifications/cancelled stop alice\'s call', async (t) => {
                if (!needLanguage(t, langs, 'bash')) return;
                const ids = callIds(alice.client);
                let started = false;
                const pending = call(alice.client, 'run_code', { language: 'bash', code: 'echo started; sleep 6; echo finished' },
                    { onprogress: () => { started = true; } });
                // Its first output, as a progress notification: the run is on.
                await waitFor(() => started, 60000, 'alice\'s run to print');
                assert.ok(ids.length > 0, 'no tools/call id recorded');
                assert.equal(await postCancel(server.url, TOKENS.bob, ids.at(-1)) < 500, true);
                const r = structured(await pending);
                assert.equal(r.status, 'ok', `${JSON.stringify(r).slice(0, 800)}\n${server.logs()}`);
                assert.equal(r.stdout, 'started\nfinished\n');
            });

            it('lets alice\'s own notifications/cancelled stop her call', async (t) => {
                // The control of the test above: the same notification, with
                // the owner's token, stops the run. (The server then sends no
                // answer, as the protocol says: the client that cancels has
                // stopped waiting; here it stops once the sandbox is gone.)
                if (!needLanguage(t, langs, 'bash')) return;
                const ids = callIds(alice.client);
                const marker = `sleep 9${Date.now() % 10}.${Date.now() % 100000}`;
                const ac = new AbortController();
                let printed = false;
                const pending = call(alice.client, 'run_code', { language: 'bash', code: `echo started; ${marker}; echo finished` },
                    { signal: ac.signal, onprogress: () => { printed = true; } })
                    .then((r) => ({ r }), (e) => ({ e }));
                await waitFor(() => printed, 60000, 'alice\'s run to print');
                await waitFor(async () => (await containersRunning(server.proc.pid, marker)).length > 0, 30000, 'alice\'s sandbox to be found');
                assert.ok(ids.length > 0, 'no tools/call id recorded');
                const started = Date.now();
                assert.equal(await postCancel(server.url, TOKENS.alice, ids.at(-1)) < 500, true);
                await waitFor(async () => (await containersRunning(server.proc.pid, marker)).length === 0, 20000, 'alice\'s sandbox to go after her notifications/cancelled');
                const took = Date.now() - started;
                ac.abort();
                const out = await pending;
                assert.ok(out.e || out.r?.structuredContent?.status === 'killed', `alice's call went on: ${JSON.stringify(out.r)?.slice(0, 500)}`);
                assert.ok(took < 20000, `the sandbox went ${took} ms after the notification`);
            });
        });
    }
});
