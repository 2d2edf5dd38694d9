// The official TypeScript client against the real server on the crun
// backend (`serve --backend crun`: containers the server starts with crun
// itself, from Docker's images), over stdio: runs in the languages with
// warm pools, a session, a run past its time, the refusal of network
// access, and no container, bundle or image root left once it exits.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { promisify } from 'node:util';

import { connect2, languages, needLanguage, runCode, show, structured, texts, waitFor } from '../lib/harness.mjs';

const execFileP = promisify(execFile);
const STATE = '/run/mcp-code-runner-crun';

/** The mounts of sessions' agent logs (a tmpfs each, under /run/mcr-crun-agent-log). */
async function logMounts() {
    const mounts = await readFile('/proc/self/mounts', 'utf8');
    return mounts.split('\n').map((l) => l.split(' ')[1]).filter((m) => m?.startsWith('/run/mcr-crun-agent-log/'));
}

/** The agent log mounts there before this server started: other servers'. */
let othersLogMounts = [];

/** What crun held before this server started: other servers' (a server killed mid-removal can leave one). */
let othersLeftovers = [];

/** Containers crun holds for servers, and bundles and image roots left. */
async function crunLeftovers() {
    const { stdout } = await execFileP('crun', ['--root', `${STATE}/crun`, 'list', '--quiet']).catch((e) => ({ stdout: `(crun list failed: ${e.message.split('\n')[0]})` }));
    const left = stdout.split('\n').filter((l) => l.trim());
    for (const dir of ['bundles', 'rootfs']) {
        const entries = await readdir(`${STATE}/${dir}`).catch(() => []);
        left.push(...entries.map((e) => `${dir}/${e}`));
    }
    const mounts = await readFile('/proc/self/mounts', 'utf8');
    left.push(...mounts.split('\n').filter((l) => l.includes(STATE)).map((l) => `mount ${l.split(' ')[1]}`));
    // A session's agent log is a tmpfs of its own.
    left.push(...(await logMounts()).filter((m) => !othersLogMounts.includes(m)).map((m) => `log mount ${m}`));
    return left.filter((l) => !othersLeftovers.includes(l));
}

describe('the crun backend through the official client', () => {
    let conn;
    let client;
    let langs;
    before(async () => {
        othersLogMounts = await logMounts();
        othersLeftovers = await crunLeftovers();
        conn = await connect2({ transport: 'stdio', args: ['--backend', 'crun'] });
        client = conn.client;
        langs = await languages(client);
    });
    after(async () => {
        await conn?.close();
        const logs = conn?.logs() ?? '';
        if (/panic|level=ERROR/.test(logs)) console.log(logs);
    });

    // Each program prints its greeting and then its host name, which is
    // every sandbox's own.
    for (const [lang, code, want] of [
        ['python', 'import socket, sys; print("hello", sys.version_info[0], socket.gethostname())', 'hello 3'],
        ['javascript', 'console.log("hello", typeof require, process.argv.length, require("os").hostname())', 'hello function 2'],
        ['bash', 'echo "hello $(id -u) $(ls /sys/class/net | tr "\\n" " ")$(hostname)"', 'hello 10001 lo'],
    ]) {
        it(`runs ${lang}, twice, in a fresh hardened container each`, async (t) => {
            if (!needLanguage(t, langs, lang)) return;
            const hosts = new Set();
            for (let i = 0; i < 2; i++) {
                const r = await runCode(client, { language: lang, code });
                assert.equal(r.status, 'ok', show(r));
                assert.ok(r.stdout.startsWith(want), show(r));
                hosts.add(r.stdout.trim().split(/\s+/).pop());
            }
            assert.equal(hosts.size, 2, `two runs, two sandboxes: ${[...hosts]}`);
        });
    }

    it('keeps a session\'s state between calls', async (t) => {
        if (!needLanguage(t, langs, 'python')) return;
        const s = structured(await client.callTool({ name: 'create_session', arguments: { language: 'python' } }));
        try {
            const a = await runCode(client, { language: 'python', session_id: s.session_id, timeout_seconds: 60, code: 'x = 41' });
            assert.equal(a.status, 'ok', show(a));
            const b = await runCode(client, { language: 'python', session_id: s.session_id, timeout_seconds: 60, code: 'x + 1' });
            assert.equal(b.value, '42', show(b));
        } finally {
            await client.callTool({ name: 'close_session', arguments: { session_id: s.session_id } });
        }
    });

    // Where the checkpoint tools work (make checkpoint-tools; CI installs
    // them), a pause checkpoints the sandbox and the next call restores it:
    // a random number drawn before the pause is back, which no replay of
    // the cells would give. Elsewhere the pause replays, and says so.
    it('pauses a session to a checkpoint and restores its memory exactly', async (t) => {
        if (!needLanguage(t, langs, 'python')) return;
        const s = structured(await client.callTool({ name: 'create_session', arguments: { language: 'python' } }));
        try {
            const a = await runCode(client, { language: 'python', session_id: s.session_id, timeout_seconds: 60, code: 'import random\nsecret = random.random()\nsecret' });
            assert.equal(a.status, 'ok', show(a));
            const p = structured(await client.callTool({ name: 'pause_session', arguments: { session_id: s.session_id } }));
            if (p.mode !== 'restored' && process.env.CI !== 'true') {
                assert.equal(p.mode, 'replayed', JSON.stringify(p));
                t.skip('no checkpoint tools on this host: the pause replays');
                return;
            }
            assert.equal(p.mode, 'restored', JSON.stringify(p));
            const b = await runCode(client, { language: 'python', session_id: s.session_id, timeout_seconds: 60, code: 'secret' });
            assert.equal(b.value, a.value, show(b));
            assert.equal(b.resumed?.mode, 'restored', show(b));
            assert.equal(b.resumed?.cells_replayed, 0, show(b));
        } finally {
            await client.callTool({ name: 'close_session', arguments: { session_id: s.session_id } });
        }
    });

    it('kills a run past its time and keeps its output', async (t) => {
        if (!needLanguage(t, langs, 'bash')) return;
        const r = await runCode(client, { language: 'bash', timeout_seconds: 2, code: 'echo before; sleep 30; echo after' });
        assert.equal(r.status, 'timeout', show(r));
        assert.ok(r.stdout.includes('before') && !r.stdout.includes('after'), show(r));
    });

    it('refuses network access with a clear error', async (t) => {
        if (!needLanguage(t, langs, 'python')) return;
        const res = await client.callTool({ name: 'run_code', arguments: { language: 'python', code: 'print(1)', network: 'packages' } });
        const text = texts(res).join('\n');
        assert.ok(res.isError || /error/.test(text), text);
        assert.match(text, /network/i, text);
    });

    it('leaves no container, bundle or image root once the server exits', async () => {
        await conn.close();
        conn = undefined;
        let left = [];
        const gone = await waitFor(async () => {
            left = await crunLeftovers();
            return left.length === 0;
        }, 30000, 'no crun leftovers').then(() => true, () => false);
        assert.ok(gone, `crun leftovers 30 s after the server exited: ${left.join(', ')}`);
    });
});

// Many sessions on one host, at a count CI can afford (`bench
// --many-sessions 1000` takes the issue's count): each created and used,
// paused by the reaper after a second idle (checkpointed where the tools
// work), and each one's next call answered with its own state.
describe('sessions the reaper pauses, each resumed by its next call', () => {
    const COUNT = 6;
    let conn;
    let client;
    before(async () => {
        conn = await connect2({ transport: 'stdio', args: ['--backend', 'crun', '--sessions-idle-pause-seconds', '1'] });
        client = conn.client;
    });
    after(async () => {
        await conn?.close();
        const logs = conn?.logs() ?? '';
        if (/panic|level=ERROR/.test(logs)) console.log(logs);
    });

    it(`pauses ${COUNT} idle python sessions and resumes each with its own state`, async (t) => {
        if (!needLanguage(t, await languages(client), 'python')) return;
        const ids = [];
        try {
            for (let i = 0; i < COUNT; i++) {
                const s = structured(await client.callTool({ name: 'create_session', arguments: { language: 'python' } }));
                ids.push(s.session_id);
                const r = await runCode(client, { language: 'python', session_id: s.session_id, timeout_seconds: 60, code: `import json, re, collections\nnumber = ${i}` });
                assert.equal(r.status, 'ok', show(r));
            }
            await waitFor(async () => {
                const { sessions } = structured(await client.callTool({ name: 'list_sessions', arguments: {} }));
                return ids.every((id) => sessions.find((s) => s.session_id === id)?.paused);
            }, 120000, `all ${COUNT} sessions paused by the reaper`);
            const modes = new Set();
            for (const [i, id] of ids.entries()) {
                const r = await runCode(client, { language: 'python', session_id: id, timeout_seconds: 60, code: 'number' });
                assert.equal(r.value, String(i), show(r));
                assert.ok(r.resumed, show(r));
                modes.add(r.resumed.mode);
            }
            if (process.env.CI === 'true') assert.deepEqual([...modes], ['restored']);
        } finally {
            for (const id of ids) await client.callTool({ name: 'close_session', arguments: { session_id: id } });
        }
    });
});
