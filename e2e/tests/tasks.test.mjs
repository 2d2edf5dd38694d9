// MCP Tasks with real clients, over stdio and Streamable HTTP:
// - 2025-11-25 experimental Tasks with the 1.x TypeScript SDK's
//   client.experimental.tasks (task-augmented tools/call, tasks/get,
//   tasks/result, tasks/list, tasks/cancel);
// - the 2026-07-28 io.modelcontextprotocol/tasks extension (SEP-2663) with
//   the 2.x client and the official @modelcontextprotocol/ext-tasks requester
//   (resultType "task", tasks/get carrying the result, tasks/cancel).
// Each covers create, poll, result, cancel (the sandbox is killed) and
// expiry at the task's TTL.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { Client as Client1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as Stdio1 } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport as Http1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { createTaskSessionFromClient, resultFromTaskOutcome } from '@modelcontextprotocol/ext-tasks/client';

import {
    BIN, startHttpServer, addServerPid, serverEnv, connect2, languages, needLanguage, show, waitFor,
    containersRunning, assertNoLeftoverContainers,
} from '../lib/harness.mjs';

// The most a task may live on the servers of this file: small, so that the
// expiry tests ask for a TTL below it and the bad-input test one above it.
const MAX_TTL_SECONDS = 120;


/** The server's flags: a small maximum TTL. */
const ttlArgs = (seconds = MAX_TTL_SECONDS) => ['--executions-task-max-ttl-seconds', String(seconds)];

/**
 * run_code's arguments for a bash program that sleeps until killed (at the
 * longest time limit); its marker finds its container.
 */
function sleeper(marker) {
    return { language: 'bash', code: `echo started; exec -a ${marker} sleep 600`, timeout_seconds: 60 };
}

/**
 * rawDispatcher sends JSON-RPC requests over a connected 2.x client's own
 * transport and resolves with the response: the ext-tasks requester needs it
 * for the 2026-07-28 task methods, which the 2.x client does not frame itself.
 */
function rawDispatcher(transport) {
    const pending = new Map();
    let next = 0;
    const original = transport.onmessage;
    transport.onmessage = (msg, extra) => {
        if (msg && msg.id !== undefined && !('method' in msg) && pending.has(msg.id)) {
            pending.get(msg.id)(msg.error ? { kind: 'error', error: msg.error } : { kind: 'result', result: msg.result });
            pending.delete(msg.id);
            return;
        }
        original?.call(transport, msg, extra);
    };
    return async (request) => {
        const id = `raw-${++next}`;
        const answer = new Promise((resolve) => pending.set(id, resolve));
        await transport.send({ jsonrpc: '2.0', ...request, id });
        return answer;
    };
}

/**
 * Connects a 2.x client in the 2026-07-28 era and an ext-tasks requester
 * session on it.
 */
async function connectV2(transport, url, args = ttlArgs()) {
    const conn = await connect2({ transport, url, negotiation: { mode: 'auto' }, name: 'mcr-e2e-tasks-v2', args });
    const session = createTaskSessionFromClient(conn.client, {
        endpointId: `mcr-e2e-${transport}-${conn.pid ?? url}`,
        rawDispatch: rawDispatcher(conn.client.transport),
        v2RequestFraming: {
            protocolVersion: '2026-07-28',
            clientInfo: { name: 'mcr-e2e-tasks-v2', version: '1.0.0' },
            clientCapabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } },
        },
    });
    return { conn, session };
}

for (const transport of ['stdio', 'http']) {
    describe(`2025-11-25 Tasks, 1.x SDK client, over ${transport}`, () => {
        let server;
        let client;
        let pid;
        let langs;
        before(async () => {
            let t;
            if (transport === 'http') {
                server = await startHttpServer({ args: ttlArgs() });
                t = new Http1(new URL(server.url));
                pid = server.proc.pid;
            } else {
                t = new Stdio1({ command: BIN, args: ['serve', ...ttlArgs()], env: serverEnv(), stderr: 'ignore' });
            }
            client = new Client1({ name: 'mcr-e2e-tasks-v1', version: '1.0.0' });
            await client.connect(t, { timeout: 30000 });
            if (transport === 'stdio') {
                pid = t.pid;
                addServerPid(pid);
            }
            langs = await languages(client);
            await client.listTools(); // the client learns run_code's taskSupport
        });
        after(async () => {
            await client?.close();
            if (server) {
                const exit = await server.stop();
                assert.deepEqual(exit, { code: 0, signal: null }, server.logs());
            }
            await assertNoLeftoverContainers();
        });

        it('advertises the tasks capability and run_code as task-capable', async () => {
            const caps = client.getServerCapabilities();
            assert.ok(caps.tasks?.requests?.tools?.call, JSON.stringify(caps));
            assert.ok(caps.tasks?.cancel && caps.tasks?.list, JSON.stringify(caps));
            const { tools } = await client.listTools();
            assert.equal(tools.find((x) => x.name === 'run_code').execution?.taskSupport, 'optional');
            assert.equal(tools.find((x) => x.name === 'list_languages').execution, undefined);
        });

        it('creates a task, polls it, and returns the same result as a plain call', async (t) => {
            if (!needLanguage(t, langs, 'bash')) return;
            const code = 'for i in 1 2 3; do echo "line $i"; sleep 0.2; done';
            const seen = [];
            const progress = [];
            let result;
            const stream = client.experimental.tasks.callToolStream(
                { name: 'run_code', arguments: { language: 'bash', code } }, CallToolResultSchema,
                { task: { ttl: 60000 }, timeout: 120000, onprogress: (p) => progress.push(p.message ?? '') });
            for await (const msg of stream) {
                seen.push(msg.type);
                if (msg.type === 'taskCreated') {
                    assert.match(msg.task.taskId, /^task-/);
                    assert.equal(msg.task.status, 'working');
                    assert.equal(msg.task.ttl, 60000);
                }
                if (msg.type === 'error') assert.fail(`task error: ${msg.error}`);
                if (msg.type === 'result') result = msg.result;
            }
            assert.equal(seen[0], 'taskCreated', seen.join(','));
            assert.equal(seen.at(-1), 'result', seen.join(','));
            const plain = await client.callTool({ name: 'run_code', arguments: { language: 'bash', code } }, undefined, { timeout: 120000 });
            const strip = (r) => ({ ...r.structuredContent, run_id: '', duration_ms: 0, total_ms: 0, cpu_time_ms: 0, max_memory_kb: 0 });
            assert.deepEqual(strip(result), strip(plain), show(result));
            assert.equal(result.structuredContent.stdout, 'line 1\nline 2\nline 3\n');
            assert.equal(result._meta?.['io.modelcontextprotocol/related-task']?.taskId !== undefined, true, show(result));
            if (transport === 'stdio') {
                // Over a connection that lasts, the output streams as progress
                // with the tools/call's token while the task runs. (Over
                // stateless HTTP it goes to a waiting tasks/result, which this
                // client sends only once the task has ended.)
                assert.match(progress.join(''), /line 1/, `progress: ${JSON.stringify(progress)}`);
            }
        });

        it('lists, gets and cancels a running task, killing its sandbox', async (t) => {
            if (!needLanguage(t, langs, 'bash')) return;
            const marker = `mcr-task-v1-${transport}-cancel`;
            const stream = client.experimental.tasks.callToolStream(
                { name: 'run_code', arguments: sleeper(marker) }, CallToolResultSchema,
                { task: { ttl: 60000 }, timeout: 120000 });
            const first = await stream.next();
            assert.equal(first.value?.type, 'taskCreated', show(first.value));
            const { taskId } = first.value.task;
            await stream.return(); // stop the client's own polling
            await waitFor(async () => (await containersRunning(pid, marker)).length === 1, 60000, 'the task\'s sandbox to run');
            assert.equal((await client.experimental.tasks.getTask(taskId)).status, 'working');
            const { tasks } = await client.experimental.tasks.listTasks();
            assert.ok(tasks.some((x) => x.taskId === taskId), show(tasks));
            const cancelled = await client.experimental.tasks.cancelTask(taskId);
            assert.equal(cancelled.status, 'cancelled', show(cancelled));
            await waitFor(async () => (await containersRunning(pid, marker)).length === 0, 30000, 'the sandbox to be killed');
            assert.equal((await client.experimental.tasks.getTask(taskId)).status, 'cancelled');
            // A second cancel is refused with -32602, as 2025-11-25 says; nothing changes.
            await assert.rejects(client.experimental.tasks.cancelTask(taskId), (e) => e.code === -32602 && /already ended/.test(e.message));
        });

        it('forgets a task at its TTL and kills its sandbox', async (t) => {
            if (!needLanguage(t, langs, 'bash')) return;
            const marker = `mcr-task-v1-${transport}-expiry`;
            const stream = client.experimental.tasks.callToolStream(
                { name: 'run_code', arguments: sleeper(marker) }, CallToolResultSchema,
                { task: { ttl: 3000 }, timeout: 120000 });
            const first = await stream.next();
            const { taskId } = first.value.task;
            await stream.return();
            await waitFor(async () => {
                try {
                    await client.experimental.tasks.getTask(taskId);
                    return false;
                } catch (e) {
                    assert.equal(e.code, -32602, String(e));
                    assert.match(e.message, /unknown task id/);
                    return true;
                }
            }, 60000, 'the task to expire');
            await waitFor(async () => (await containersRunning(pid, marker)).length === 0, 30000, 'the expired task\'s sandbox to go');
        });

        it('refuses a TTL above the maximum, naming the setting', async (t) => {
            if (!needLanguage(t, langs, 'bash')) return;
            const stream = client.experimental.tasks.callToolStream(
                { name: 'run_code', arguments: { language: 'bash', code: 'echo no' } }, CallToolResultSchema,
                { task: { ttl: (MAX_TTL_SECONDS + 1) * 1000 } });
            const messages = [];
            for await (const msg of stream) messages.push(msg);
            assert.equal(messages.at(-1).type, 'error', show(messages));
            assert.match(String(messages.at(-1).error), /task_max_ttl_seconds/);
        });
    });

    describe(`2026-07-28 Tasks extension, 2.x client with ext-tasks, over ${transport}`, () => {
        let server;
        let conn;
        let session;
        let pid;
        let langs;
        before(async () => {
            if (transport === 'http') {
                server = await startHttpServer({ args: ttlArgs() });
                pid = server.proc.pid;
            }
            ({ conn, session } = await connectV2(transport, server?.url));
            if (transport === 'stdio') pid = conn.pid;
            langs = await languages(conn.client);
        });
        after(async () => {
            await session?.close();
            await conn?.close();
            if (server) {
                const exit = await server.stop();
                assert.deepEqual(exit, { code: 0, signal: null }, server.logs());
            }
            await assertNoLeftoverContainers();
        });

        it('advertises the extension', () => {
            const caps = conn.client.getServerCapabilities();
            assert.ok(caps.extensions?.['io.modelcontextprotocol/tasks'], JSON.stringify(caps));
        });

        it('answers run_code with a task whose tasks/get carries the result', async (t) => {
            if (!needLanguage(t, langs, 'bash')) return;
            const execution = await session.callTool('run_code', { language: 'bash', code: 'echo one; sleep 1; echo two' },
                { task: { preference: 'require' } });
            assert.equal(execution.kind, 'task');
            assert.match(execution.handle.taskId, /^task-/);
            const events = [];
            const { outcome } = await execution.settle({ onEvent: (e) => { events.push(e.type === 'task' ? e.task.status : e.outcome.status); } });
            assert.equal(outcome.status, 'completed', show(outcome));
            const result = resultFromTaskOutcome(outcome);
            assert.equal(result.structuredContent.stdout, 'one\ntwo\n', show(result));
            assert.equal(result.isError ?? false, false);
            assert.equal(events.at(-1), 'completed', events.join(','));
            const snap = await session.task(execution.handle.taskId).snapshot();
            assert.equal(snap.status, 'completed');
            assert.ok(snap.ttl === MAX_TTL_SECONDS * 1000 || snap.retentionMs === MAX_TTL_SECONDS * 1000, show(snap));
        });

        it('cancels a running task, killing its sandbox', async (t) => {
            if (!needLanguage(t, langs, 'bash')) return;
            const marker = `mcr-task-v2-${transport}-cancel`;
            const execution = await session.callTool('run_code', sleeper(marker), { task: { preference: 'require' } });
            const { taskId } = execution.handle;
            await waitFor(async () => (await containersRunning(pid, marker)).length === 1, 60000, 'the task\'s sandbox to run');
            assert.equal((await session.task(taskId).snapshot()).status, 'working');
            await session.cancelTask(taskId);
            await waitFor(async () => (await containersRunning(pid, marker)).length === 0, 30000, 'the sandbox to be killed');
            assert.equal((await session.task(taskId).snapshot()).status, 'cancelled');
            // Cancelling again is acknowledged (idempotent).
            await session.cancelTask(taskId);
            await execution.close();
        });

        it('answers an unknown task id with -32602', async () => {
            await assert.rejects(session.task('task-00000000000000000000000000000000').snapshot(),
                (e) => e.code === -32602 && /unknown task id/.test(e.message), 'an unknown task id');
        });

        it('forgets a task at its TTL and kills its sandbox', async (t) => {
            if (!needLanguage(t, langs, 'bash')) return;
            // A 2026-era client asks for no TTL: every task gets the
            // operator's maximum, here 3 s on a server of its own.
            let short;
            let shortPid;
            if (transport === 'http') {
                short = await startHttpServer({ args: ttlArgs(3) });
                shortPid = short.proc.pid;
            }
            const { conn: c, session: s } = await connectV2(transport, short?.url, ttlArgs(3));
            if (transport === 'stdio') shortPid = c.pid;
            try {
                const marker = `mcr-task-v2-${transport}-expiry`;
                const execution = await s.callTool('run_code', sleeper(marker), { task: { preference: 'require' } });
                const { taskId } = execution.handle;
                assert.equal((await s.task(taskId).snapshot()).ttl, 3000);
                await waitFor(async () => {
                    try {
                        await s.task(taskId).snapshot();
                        return false;
                    } catch (e) {
                        assert.equal(e.code, -32602, String(e));
                        return true;
                    }
                }, 60000, 'the task to expire');
                await waitFor(async () => (await containersRunning(shortPid, marker)).length === 0, 30000, 'the expired task\'s sandbox to go');
                await execution.detach();
            } finally {
                await s.close();
                await c.close();
                if (short) await short.stop();
            }
        });
    });
}
