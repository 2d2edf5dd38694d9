// Shared helpers of the end-to-end tests: start the server binary over stdio
// or Streamable HTTP, connect the official MCP clients to it, and check that
// no sandbox container is left behind.

import { spawn, execFile } from 'node:child_process';
import { before, after } from 'node:test';
import { once } from 'node:events';
import net from 'node:net';
import assert from 'node:assert/strict';
import { promisify } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

const execFileP = promisify(execFile);

/** The server binary under test (make test-e2e sets it). */
export const BIN = process.env.MCR_BINARY;
if (!BIN) {
    throw new Error('set MCR_BINARY to the mcp-code-runner binary (make test-e2e does: MCR_BINARY=$PWD/bin/mcp-code-runner)');
}

/** In CI a missing runtime image fails the tests instead of skipping them. */
export const IS_CI = process.env.CI === 'true';

/** The label every sandbox container carries. */
export const MANAGED_LABEL = 'io.mcp-code-runner.managed=true';

/**
 * The engine behind DOCKER_HOST when it is not Docker (MCR_E2E_ENGINE,
 * set by make test-engines): "podman", "rootless", or "" for Docker.
 */
export const ENGINE = process.env.MCR_E2E_ENGINE ?? '';

/** The protocol eras the 2.x client is run in. */
export const ERAS = [
    // The plain 2025 initialize handshake.
    { name: '2025-11-25', negotiation: { mode: 'legacy' }, era: 'legacy', version: '2025-11-25' },
    // server/discover probe first; this server must be recognized as modern.
    { name: '2026-07-28', negotiation: { mode: 'auto' }, era: 'modern', version: '2026-07-28' },
];

// The data directories of the servers this test process started, removed
// when it exits.
const dataDirs = [];
process.on('exit', () => {
    for (const dir of dataDirs) rmSync(dir, { recursive: true, force: true });
});

/**
 * Environment for server processes: ours, with string values only, and a
 * data directory of the server's own (one server per data directory: a
 * second server on one is refused).
 */
export function serverEnv() {
    const env = {};
    for (const [k, v] of Object.entries(process.env)) {
        if (typeof v === 'string') env[k] = v;
    }
    const dataDir = mkdtempSync(join(tmpdir(), 'mcr-e2e-state-'));
    dataDirs.push(dataDir);
    env.MCR_DATA_DIR = dataDir;
    // These tests find a server's sandboxes through Docker's labels: the
    // docker backend, unless the run names one (crun-backend.test.mjs
    // passes --backend crun, which overrides this).
    env.MCR_BACKEND ??= 'docker';
    return env;
}

// Every process this file starts, so that a crash still ends them.
const children = new Set();
// PIDs of every server this test process started: sandbox containers carry
// their owner's PID (label io.mcp-code-runner.owner-pid).
const serverPids = new Set();

/** Records the PID of a server process started by a client or tool. */
export function addServerPid(pid) {
    if (pid) serverPids.add(String(pid));
}
process.on('exit', () => {
    for (const c of children) {
        try {
            c.kill('SIGKILL');
        } catch {
            // already gone
        }
    }
});

/** A free TCP port on 127.0.0.1. */
export async function freePort() {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1');
    await once(srv, 'listening');
    const { port } = srv.address();
    srv.close();
    await once(srv, 'close');
    return port;
}

/** Keeps the last max characters of a stream, for diagnostics. */
function tail(stream, max = 20000) {
    const buf = { text: '' };
    stream?.setEncoding?.('utf8');
    stream?.on('data', (d) => {
        buf.text = (buf.text + d).slice(-max);
    });
    return buf;
}

/**
 * Registers before/after hooks in the enclosing describe that, for the
 * 'http' transport, start a server first and check at the end that it exits
 * cleanly on SIGTERM. Returns a holder whose `server` is that server (or
 * undefined over stdio, where each connection starts its own).
 */
export function httpServerFor(transport) {
    const holder = { server: undefined };
    before(async () => {
        if (transport === 'http') holder.server = await startHttpServer();
    });
    after(async () => {
        const server = holder.server;
        if (!server) return;
        const exit = await server.stop();
        if (/panic|level=ERROR/.test(server.logs())) console.log(server.logs());
        assert.deepEqual(exit, { code: 0, signal: null }, `the HTTP server did not exit cleanly on SIGTERM\n${server.logs()}`);
    });
    return holder;
}

/**
 * Starts `BIN serve --http 127.0.0.1:PORT ...args` on a free port and waits
 * until /readyz answers 200 (Docker reachable, warm pools filling). Returns { url, stop, logs }.
 */
export async function startHttpServer({ attempts = 3, args = [] } = {}) {
    let lastErr;
    for (let i = 0; i < attempts; i++) {
        const port = await freePort();
        const addr = `127.0.0.1:${port}`;
        const proc = spawn(BIN, ['serve', '--http', addr, ...args], { env: serverEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
        children.add(proc);
        addServerPid(proc.pid);
        const out = tail(proc.stdout);
        const err = tail(proc.stderr);
        let exited = null;
        const exitP = new Promise((resolve) => {
            proc.on('exit', (code, signal) => {
                exited = { code, signal };
                children.delete(proc);
                resolve(exited);
            });
        });
        const logs = () => `--- server stdout ---\n${out.text}\n--- server stderr ---\n${err.text}`;
        const stop = async () => {
            if (exited) return exited;
            proc.kill('SIGTERM');
            // The server gives runs in flight up to 30 s to end at shutdown.
            const t = setTimeout(() => proc.kill('SIGKILL'), 40000);
            const res = await exitP;
            clearTimeout(t);
            return res;
        };
        const deadline = Date.now() + 30000;
        let lastStatus = 'no answer';
        while (Date.now() < deadline && !exited) {
            try {
                const res = await fetch(`http://${addr}/readyz`, { signal: AbortSignal.timeout(2000) });
                lastStatus = `${res.status} ${(await res.text()).trim()}`;
                if (res.status === 200) {
                    return { url: `http://${addr}/mcp`, addr, port, proc, stop, logs };
                }
            } catch (e) {
                lastStatus = String(e?.cause?.code ?? e?.message ?? e);
            }
            await sleep(100);
        }
        await stop();
        lastErr = new Error(`server on ${addr} did not become healthy (last /readyz: ${lastStatus}; exit: ${JSON.stringify(exited)})\n${logs()}`);
        // A port taken between freePort() and the server's listen: try another.
        if (!/address already in use/i.test(err.text)) break;
    }
    throw lastErr;
}

/**
 * Connects an @modelcontextprotocol/client (2.x) Client over stdio (spawning
 * `BIN serve ...args`) or HTTP (url), with the given version negotiation,
 * the client capabilities it declares and setup(client) run before it
 * connects (to register handlers, e.g. of elicitation/create).
 * Returns { client, close, logs }.
 */
export async function connect2({ transport, url, negotiation, name = 'mcr-e2e', token, args = [], capabilities, setup }) {
    const client = new Client({ name, version: '1.0.0' }, { versionNegotiation: negotiation, ...(capabilities && { capabilities }) });
    setup?.(client);
    let t;
    let err = { text: '' };
    if (transport === 'stdio') {
        t = new StdioClientTransport({ command: BIN, args: ['serve', ...args], env: serverEnv(), stderr: 'pipe' });
        err = tail(t.stderr);
    } else {
        t = new StreamableHTTPClientTransport(new URL(url), token ? { requestInit: { headers: { Authorization: `Bearer ${token}` } } } : undefined);
    }
    await client.connect(t, { timeout: 30000 });
    if (transport === 'stdio') addServerPid(t.pid);
    return {
        client,
        // The server process (stdio only; over HTTP it is the HTTP server's).
        pid: transport === 'stdio' ? t.pid : undefined,
        close: async () => {
            await client.close();
        },
        logs: () => `--- stdio server stderr ---\n${err.text}`,
    };
}

/** The text of every text content block of a result. */
export function texts(result) {
    return (result.content ?? []).filter((c) => c.type === 'text').map((c) => c.text);
}

/**
 * Checks a tool result's shape: structuredContent present and the same JSON
 * in the last text block (for clients that read only content).
 */
export function structured(result) {
    assert.ok(!result.isError, `unexpected isError result: ${JSON.stringify(result).slice(0, 2000)}`);
    assert.ok(result.structuredContent, `no structuredContent in ${JSON.stringify(result).slice(0, 2000)}`);
    const t = texts(result);
    assert.ok(t.length >= 1, 'no text content');
    assert.deepEqual(JSON.parse(t[t.length - 1]), result.structuredContent, 'the last text block is not the structuredContent JSON');
    return result.structuredContent;
}

/** The languages list_languages reports, by name. */
export async function languages(client) {
    const res = await client.callTool({ name: 'list_languages', arguments: {} });
    const out = structured(res);
    return new Map(out.languages.map((l) => [l.name, l]));
}

/**
 * Whether a test needing lang can run: outside CI a language whose image is
 * not built skips the test; in CI (CI=true) it fails it.
 */
export function needLanguage(t, langs, lang) {
    const info = langs.get(lang);
    assert.ok(info, `language ${lang} is not in list_languages`);
    if (info.available) return true;
    const msg = `the ${lang} runtime image is not built (run: ${BIN} images build ${lang})`;
    if (IS_CI) assert.fail(`${msg}; CI=true, so this is a failure`);
    t.skip(msg);
    return false;
}

/** Calls run_code and returns its structured result. */
export async function runCode(client, args, opts = {}) {
    const res = await client.callTool({ name: 'run_code', arguments: args }, { timeout: 120000, ...opts });
    return structured(res);
}

/** Formats a run result for assertion messages. */
export function show(r) {
    return JSON.stringify(r, null, 1).slice(0, 3000);
}

/** Sandbox containers that exist now: [{ id, ownerPid, status, runId }]. */
export async function managedContainers() {
    const { stdout } = await execFileP('docker', [
        'ps', '-a', '--filter', `label=${MANAGED_LABEL}`,
        '--format', '{{.ID}}\t{{.Label "io.mcp-code-runner.owner-pid"}}\t{{.Status}}\t{{.Label "io.mcp-code-runner.run-id"}}',
    ]);
    return stdout.split('\n').filter((l) => l.trim()).map((l) => {
        const [id, ownerPid, status, runId] = l.split('\t');
        return { id, ownerPid, status, runId };
    });
}

/** IDs of the sandbox containers of the server with PID pid. */
export async function containersOf(pid) {
    const { stdout } = await execFileP('docker', ['ps', '-aq', '--filter', `label=${MANAGED_LABEL}`, '--filter', `label=io.mcp-code-runner.owner-pid=${pid}`]);
    return stdout.split('\n').map((x) => x.trim()).filter(Boolean);
}

/**
 * IDs of the sandbox containers of the server with PID pid that run a
 * process whose command line contains needle (docker top).
 */
export async function containersRunning(pid, needle) {
    const found = [];
    for (const id of await containersOf(pid)) {
        try {
            const stdout = await processesOf(id);
            if (stdout.includes(needle)) found.push(id);
        } catch {
            // removed meanwhile
        }
    }
    return found;
}

/**
 * The command lines of the processes in container id. Podman 4.3's
 * Docker-compatible top answers empty, so its own API (podman --remote)
 * lists them; rootless Docker without cgroups cannot list them at all, so
 * they are the container's first process and its descendants on this host.
 */
export async function processesOf(id) {
    if (ENGINE === 'podman') {
        return (await execFileP('podman', ['--remote', '--url', process.env.DOCKER_HOST, 'top', id, 'pid', 'args'])).stdout;
    }
    if (ENGINE !== 'rootless') {
        return (await execFileP('docker', ['top', id, '-eo', 'pid,args'])).stdout;
    }
    const first = (await execFileP('docker', ['inspect', '-f', '{{.State.Pid}}', id])).stdout.trim();
    const rows = (await execFileP('ps', ['-e', '-o', 'pid=,ppid=,args='])).stdout.split('\n')
        .map((l) => l.trim().match(/^(\d+)\s+(\d+)\s+(.*)$/)).filter(Boolean);
    const tree = new Set([first]);
    let grew = true;
    while (grew) {
        grew = false;
        for (const [, pid, ppid] of rows) {
            if (tree.has(ppid) && !tree.has(pid)) {
                tree.add(pid);
                grew = true;
            }
        }
    }
    return rows.filter(([, pid]) => tree.has(pid)).map(([, pid, , args]) => `${pid} ${args}`).join('\n');
}

/** Polls cond every 100 ms until it is true; fails after ms. */
export async function waitFor(cond, ms, what) {
    const deadline = Date.now() + ms;
    while (Date.now() < deadline) {
        if (await cond()) return;
        await sleep(100);
    }
    assert.fail(`timed out after ${ms} ms waiting for ${what}`);
}

/** Whether process pid has ended (or never ran here). */
function processGone(pid) {
    try {
        process.kill(Number(pid), 0);
        return false;
    } catch (err) {
        return err.code === 'ESRCH' || !Number(pid);
    }
}

/**
 * Asserts that no sandbox container remains, allowing the servers a few
 * seconds to finish removing theirs. The containers of the servers this
 * test started count, and so does any container whose owning process has
 * ended; the containers of processes still at work (another test suite's
 * servers on a shared machine) are reported but not counted.
 */
export async function assertNoLeftoverContainers(waitMs = 20000) {
    const relevant = (cs) => cs.filter((c) => serverPids.has(c.ownerPid) || processGone(c.ownerPid));
    const deadline = Date.now() + waitMs;
    let all = await managedContainers();
    while (relevant(all).length > 0 && Date.now() < deadline) {
        await sleep(500);
        all = await managedContainers();
    }
    const left = relevant(all);
    const fmt = (cs) => cs.map((c) => `${c.id} owner-pid=${c.ownerPid} run=${c.runId} (${c.status})`).join('\n');
    if (left.length > 0) {
        assert.fail(`sandbox containers left behind (servers started by this test: ${[...serverPids].join(' ')}):\n${fmt(left)}`);
    }
    const others = all.filter((c) => !left.includes(c));
    if (others.length > 0) {
        console.log(`# ignoring sandbox containers of processes still at work that this test did not start:\n${fmt(others)}`);
    }
}
