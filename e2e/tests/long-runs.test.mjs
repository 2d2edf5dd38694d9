// Long runs with the official TypeScript client (@modelcontextprotocol/client
// 2.x) over stdio and Streamable HTTP, in both protocol eras (issues #5 and
// #6): run_code output streamed as progress notifications, cancellation of a
// call (the sandbox is gone within seconds, measured through the Docker
// API), background executions (start/get/cancel/list_executions, long
// polling, output offsets, a 2-minute job) and sessions (interpreter state,
// binary files, a matplotlib plot as an image block, close).

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';

import {
    ERAS, connect2, httpServerFor, languages, needLanguage, structured, show, texts,
    assertNoLeftoverContainers, containersOf, processesOf, waitFor,
} from '../lib/harness.mjs';


/** Request timeout of every call; long polls are at most 30 s. */
const CALL_MS = 120000;

/** Calls a tool and returns the raw result (isError results included). */
function call(client, name, args, opts = {}) {
    return client.callTool({ name, arguments: args }, { timeout: CALL_MS, ...opts });
}

/** Calls a tool that must succeed and returns its structuredContent. */
async function ok(client, name, args, opts = {}) {
    return structured(await call(client, name, args, opts));
}

/** Asserts an isError tool result whose text matches re; returns the text. */
function assertToolError(res, re, what) {
    assert.equal(res.isError, true, `${what}: expected an isError result, got ${JSON.stringify(res).slice(0, 2000)}`);
    const msg = texts(res).join('\n');
    assert.match(msg, re, `${what}: ${msg}`);
    return msg;
}

/**
 * Records every JSON-RPC message the client sends and receives (with the
 * time), by wrapping its transport: the evidence for a failed assertion.
 * Also records the client's errors (a progress notification or a response
 * for a request that already ended shows up there).
 */
function tap(client) {
    const log = [];
    const errors = [];
    const tr = client.transport;
    const send = tr.send.bind(tr);
    tr.send = (msg, opts) => {
        log.push({ at: Date.now(), dir: '>>', msg });
        return send(msg, opts);
    };
    const onmessage = tr.onmessage;
    tr.onmessage = (msg, extra) => {
        log.push({ at: Date.now(), dir: '<<', msg });
        return onmessage?.call(tr, msg, extra);
    };
    const onerror = client.onerror;
    client.onerror = (e) => {
        errors.push({ at: Date.now(), message: String(e?.message ?? e) });
        onerror?.(e);
    };
    return {
        log,
        errors,
        /** The exchange since index from, as text (long texts cut). */
        dump(from = 0, max = 12000) {
            return log.slice(from).map((e) => `${new Date(e.at).toISOString()} ${e.dir} ${JSON.stringify(e.msg)}`).join('\n').slice(-max);
        },
        /** The id of the last tools/call sent whose arguments contain needle. */
        requestId(needle) {
            const hit = [...log].reverse().find((e) => e.dir === '>>' && e.msg?.method === 'tools/call' && JSON.stringify(e.msg.params?.arguments ?? {}).includes(needle));
            return hit?.msg?.id;
        },
    };
}

/**
 * Streams Docker's die and destroy events of the sandboxes of the server
 * with PID owner, from sinceMs on. Returns { events, stop }; events are
 * { id, action, atMs } with the daemon's timestamps.
 */
function dockerEvents(owner, sinceMs) {
    const proc = spawn('docker', [
        'events', '--since', String(Math.floor(sinceMs / 1000)),
        '--filter', 'type=container', '--filter', `label=io.mcp-code-runner.owner-pid=${owner}`,
        '--filter', 'event=die', '--filter', 'event=destroy',
        '--format', '{{.ID}} {{.Action}} {{.TimeNano}}',
    ], { stdio: ['ignore', 'pipe', 'pipe'] });
    const kill = () => proc.kill('SIGKILL');
    process.once('exit', kill);
    const events = [];
    let buf = '';
    proc.stdout.setEncoding('utf8');
    proc.stdout.on('data', (d) => {
        buf += d;
        const lines = buf.split('\n');
        buf = lines.pop();
        for (const l of lines) {
            const [id, action, ns] = l.trim().split(' ');
            if (id && ns) events.push({ id, action, atMs: Number(BigInt(ns) / 1000000n) });
        }
    });
    return {
        events,
        find: (shortId, action) => events.find((e) => e.action === action && e.id.startsWith(shortId)),
        stop: () => {
            process.removeListener('exit', kill);
            kill();
        },
    };
}

/**
 * IDs of the sandboxes of the server with PID owner that run a process whose
 * command line contains needle: harness.containersRunning, but asking
 * the engine about every container at once (a server keeps a warm pool of
 * several per language).
 */
async function containersRunning(owner, needle) {
    const ids = await containersOf(owner);
    const hits = await Promise.all(ids.map(async (id) => {
        try {
            return (await processesOf(id)).includes(needle) ? id : null;
        } catch {
            return null; // removed meanwhile
        }
    }));
    return hits.filter(Boolean);
}

/** A `sleep 60` command line no other run uses: sleep 60.NNNNNN. */
function uniqueSleep60() {
    return `sleep 60.${String(Math.floor(Math.random() * 1e6)).padStart(6, '0')}`;
}

/** stderr text as progress messages carry it: each line prefixed. */
function prefixed(s) {
    return (s ?? '').split(/(?<=\n)/).filter(Boolean).map((l) => `[stderr] ${l}`).join('');
}

/** Measured values, printed at the end. */
const measured = [];
function note(line) {
    measured.push(line);
    console.log(`# ${line}`);
}

// followTwoMinuteExecution starts a 2-minute bash execution and follows it
// through get_execution's long polls and output offsets to its end.
async function followTwoMinuteExecution(client) {
    const t0 = Date.now();
    const x = await ok(client, 'start_execution', {
        language: 'bash', code: 'for i in $(seq 1 120); do echo $i; sleep 1; done', timeout_seconds: 200,
    });
    let offset = 0;
    let streamed = '';
    let last;
    const polls = [];
    while (Date.now() - t0 < 400000) {
        const p0 = Date.now();
        last = await ok(client, 'get_execution', { execution_id: x.execution_id, wait_seconds: 30, stdout_offset: offset }, { timeout: 90000 });
        polls.push(`${Math.round((Date.now() - p0) / 1000)}s:${last.status}:+${last.stdout.length}B`);
        assert.equal(last.stdout_offset, offset, show(last));
        streamed += last.stdout;
        offset = last.stdout_offset + Buffer.byteLength(last.stdout);
        if (last.status !== 'running') break;
    }
    return { took: Date.now() - t0, polls, last, streamed };
}

for (const transport of ['stdio', 'http']) {
    describe(`long runs over ${transport}`, () => {
        const http = httpServerFor(transport);

        for (const era of ERAS) {
            describe(`protocol ${era.name}`, () => {
                let conn;
                let client;
                let langs;
                let wire;
                let cancelled; // what the cancellation test saw
                let stoppedExecution; // cancel_execution's answer in the executions test
                let twoMinuteRun; // what followTwoMinuteExecution saw
                const combo = `${transport}/${era.name}`;
                before(async () => {
                    conn = await connect2({ transport, url: http.server?.url, negotiation: era.negotiation, name: 'mcr-e2e-long-runs' });
                    client = conn.client;
                    assert.equal(client.getProtocolEra(), era.era);
                    wire = tap(client);
                    langs = await languages(client);
                    // The 2-minute execution runs beside this block's other
                    // tests (its minutes are a sleeping shell's), and its test
                    // checks what it saw.
                    if (transport === 'http' && era.era === 'modern' && langs.get('bash')?.available) {
                        twoMinuteRun = followTwoMinuteExecution(client).then((v) => v, (error) => ({ error }));
                    }
                });
                after(async () => {
                    await conn?.close();
                    const logs = conn?.logs() ?? '';
                    if (/panic|level=ERROR/.test(logs)) console.log(logs);
                });

                it('streams run_code output as progress notifications before the result', { timeout: 180000 }, async (t) => {
                    if (!needLanguage(t, langs, 'bash')) return;
                    // A line every 0.5 s for 3 s, one stderr line, a last line.
                    // The pauses around the stderr line keep it in a
                    // notification of its own (one notification puts its
                    // stdout before its stderr).
                    const tag = `progress-${Date.now()}`;
                    const code = `# ${tag}\nfor i in 1 2 3 4 5 6; do echo "line $i"; sleep 0.5; done\nsleep 0.5\necho "warning" >&2\nsleep 1\necho "end"\n`;
                    const stdout = 'line 1\nline 2\nline 3\nline 4\nline 5\nline 6\nend\n';
                    const expected = 'line 1\nline 2\nline 3\nline 4\nline 5\nline 6\n[stderr] warning\nend\n';
                    const from = wire.log.length;
                    const errsFrom = wire.errors.length;
                    const delivered = [];
                    const started = Date.now();
                    const res = await call(client, 'run_code', { language: 'bash', code }, { onprogress: (p) => delivered.push(p) });
                    // Anything arriving after the result would show in the log
                    // (and as a client error): give it a moment.
                    await sleep(500);

                    // What came over the wire for this request, in order: its
                    // progress notifications, then its result.
                    const sent = wire.log.slice(from).find((e) => e.dir === '>>' && e.msg?.method === 'tools/call' && e.msg.params?.arguments?.code === code);
                    assert.ok(sent, 'the tools/call request was seen');
                    const token = sent.msg.params?._meta?.progressToken;
                    assert.notEqual(token, undefined, `the client sent a progress token: ${JSON.stringify(sent.msg)}`);
                    const mine = wire.log.slice(from).filter((e) => e.dir === '<<' && (e.msg?.id === sent.msg.id
                        || (e.msg?.method === 'notifications/progress' && e.msg.params?.progressToken === token)));
                    const resultIdx = mine.findIndex((e) => e.msg?.id === sent.msg.id);
                    const resultAt = mine[resultIdx]?.at;
                    const events = mine.filter((e) => e.msg?.method === 'notifications/progress').map((e) => ({ at: e.at, p: e.msg.params }));
                    const diag = () => `${events.length} notifications on the wire, ${delivered.length} delivered to onprogress: ${JSON.stringify(events.map((e) => ({ ms: e.at - started, ...e.p })), null, 1).slice(0, 6000)}\n--- wire ---\n${wire.dump(from)}`;

                    const r = structured(res);
                    assert.equal(r.status, 'ok', show(r));
                    assert.equal(r.stdout, stdout, 'the final result still has the whole stdout');
                    assert.equal(r.stderr, 'warning\n', show(r));

                    assert.equal(resultIdx, mine.length - 1, `nothing arrives for the request after its result: ${diag()}`);
                    assert.ok(events.length >= 3, `several progress notifications expected: ${diag()}`);
                    for (let i = 1; i < events.length; i++) {
                        assert.ok(events[i].p.progress > events[i - 1].p.progress, `progress increases: ${diag()}`);
                    }
                    assert.equal(events.map((e) => e.p.message).join(''), expected, `the messages, concatenated, are the output: ${diag()}`);
                    for (const { p } of events) {
                        const meta = p._meta ?? {};
                        assert.equal(meta.stage, 'run', `_meta.stage: ${JSON.stringify(p)}`);
                        assert.equal(p.message, (meta.stdout ?? '') + prefixed(meta.stderr), `_meta splits the message by stream: ${JSON.stringify(p)}`);
                    }
                    assert.equal(events.map((e) => e.p._meta?.stdout ?? '').join(''), r.stdout, `_meta.stdout, concatenated: ${diag()}`);
                    assert.equal(events.map((e) => e.p._meta?.stderr ?? '').join(''), r.stderr, `_meta.stderr, concatenated: ${diag()}`);
                    assert.equal(events.at(-1).p.progress, r.stdout_bytes + r.stderr_bytes, `the last progress value counts every byte: ${diag()}`);
                    // Streamed as printed, not all at the end: the first line
                    // was printed more than 4 s before the last.
                    const spread = resultAt - events[0].at;
                    assert.ok(spread >= 1000, `the first notification came ${spread} ms before the result: ${diag()}`);

                    // The client's onprogress callback got them in order. The
                    // 2.x client (2.4.0) runs notification handlers a microtask
                    // later but handles a response at once, dropping the
                    // request's progress handler: a notification read together
                    // with the result (typically the last one, sent right before
                    // it) never reaches onprogress and is reported through
                    // onerror ("unknown token") instead. So onprogress sees the
                    // notifications in order, possibly without the last ones.
                    assert.ok(delivered.length >= 3, `onprogress got ${delivered.length} of ${events.length}: ${diag()}`);
                    assert.deepEqual(delivered.map((p) => p.message), events.slice(0, delivered.length).map((e) => e.p.message), `onprogress got them in order: ${diag()}`);
                    const dropped = wire.errors.slice(errsFrom);
                    assert.ok(dropped.every((e) => /unknown token/.test(e.message)) && dropped.length === events.length - delivered.length, `client errors: ${JSON.stringify(dropped)}\n${diag()}`);
                    note(`${combo}: progress: ${events.length} notifications over ${events.at(-1).at - events[0].at} ms, first ${spread} ms before the result (call ${resultAt - started} ms); onprogress got ${delivered.length}`);
                });

                it('cancelling run_code removes its sandbox within seconds', { timeout: 180000 }, async (t) => {
                    if (!needLanguage(t, langs, 'bash')) return;
                    const owner = conn.pid ?? http.server.proc.pid;
                    // sleep 60, with a fraction no other run uses, to find this
                    // run's sandbox among the pool's.
                    const marker = uniqueSleep60();
                    const from = wire.log.length;
                    const errsFrom = wire.errors.length;
                    const progress = [];
                    cancelled = undefined;
                    const ac = new AbortController();
                    const pending = call(
                        client, 'run_code', { language: 'bash', code: `echo started; ${marker}`, timeout_seconds: 60 },
                        { signal: ac.signal, onprogress: (p) => progress.push(p) },
                    ).then((r) => ({ r }), (e) => ({ e }));
                    let ids = [];
                    let early;
                    pending.then((o) => { early = o; });
                    await waitFor(async () => early || (ids = await containersRunning(owner, marker)).length > 0, 50000, `the run (${marker}) to start`);
                    assert.ok(!early, `the call ended before it was cancelled: ${JSON.stringify(early?.r ?? String(early?.e)).slice(0, 2000)}`);
                    assert.equal(ids.length, 1, `one sandbox runs ${marker}: ${ids}`);
                    const id = ids[0];
                    const events = dockerEvents(owner, Date.now() - 2000);
                    try {
                        const reqId = wire.requestId(marker);
                        const abortedAt = Date.now();
                        const logAtAbort = wire.log.length;
                        ac.abort();
                        const out = await pending;
                        assert.ok(out.e, `the call was aborted, got ${JSON.stringify(out.r)?.slice(0, 500)}`);

                        let polledGoneAt = 0;
                        await waitFor(async () => {
                            const left = await containersOf(owner);
                            if (left.some((l) => id.startsWith(l) || l.startsWith(id))) return false;
                            polledGoneAt = Date.now();
                            return true;
                        }, 20000, `the sandbox ${id} to be removed after the cancellation\n--- wire ---\n${wire.dump(from)}`);
                        // The daemon's own timestamps of the kill and the removal.
                        await waitFor(async () => !!events.find(id, 'destroy'), 5000, `the destroy event of ${id}`).catch(() => {});
                        const die = events.find(id, 'die');
                        const destroy = events.find(id, 'destroy');
                        const polled = polledGoneAt - abortedAt;
                        const removed = destroy ? destroy.atMs - abortedAt : polled;
                        note(`${combo}: cancel latency: container died ${die ? `${die.atMs - abortedAt} ms` : '(no event)'}, removed ${destroy ? `${removed} ms` : '(no event)'} after abort() (Docker events); absent from docker ps ${polled} ms after`);
                        assert.ok(removed < 5000, `the sandbox was removed ${removed} ms after the cancellation (target 1 s, limit 5 s)`);
                        assert.ok(polled < 5000, `docker ps still listed the sandbox ${polled} ms after the cancellation`);

                        // What arrives for the request after the abort is checked
                        // by the next test.
                        await sleep(1000);
                        cancelled = {
                            reqId, from, errsFrom,
                            late: wire.log.slice(logAtAbort).filter((e) => e.dir === '<<' && (
                                (e.msg?.id !== undefined && e.msg.id === reqId)
                                || (e.msg?.method === 'notifications/progress' && e.msg.params?.progressToken === reqId))),
                        };
                    } finally {
                        events.stop();
                    }
                    // The connection still works.
                    const r = await ok(client, 'run_code', { language: 'bash', code: 'echo after' });
                    assert.equal(r.stdout, 'after\n', show(r));
                });

                // Nothing arrives for the cancelled request, over either
                // transport: over HTTP the request's stream is closed; over
                // stdio the SDK (go-sdk v1.8.0) would still write the
                // handler's "killed" result, and the server's stdio
                // transport (internal/mcpserver/stdio.go) drops it.
                it('sends nothing more for a cancelled run_code request', () => {
                    assert.ok(cancelled, 'the cancellation test ran');
                    assert.deepEqual(cancelled.late.map((e) => e.msg), [], `messages for request ${cancelled.reqId} after its cancellation\n--- wire ---\n${wire.dump(cancelled.from)}`);
                    assert.deepEqual(wire.errors.slice(cancelled.errsFrom).filter((e) => /unknown (token|message ID)/i.test(e.message)), [], 'late messages reported by the client');
                });

                it('start_execution, get_execution (partial output, long poll, offsets), cancel_execution, list_executions', { timeout: 240000 }, async (t) => {
                    if (!needLanguage(t, langs, 'bash')) return;
                    const full = Array.from({ length: 6 }, (_, i) => `tick ${i + 1}\n`).join('');
                    const started = await ok(client, 'start_execution', {
                        language: 'bash', code: 'for i in 1 2 3 4 5 6; do echo "tick $i"; sleep 1; done',
                    });
                    const id = started.execution_id;
                    assert.match(id, /^[A-Za-z0-9_-]+$/, show(started));
                    assert.equal(started.status, 'running', show(started));
                    assert.equal(started.language, 'bash');

                    // While it runs: status running, some output, not all.
                    let partial;
                    const seen = [];
                    await waitFor(async () => {
                        const s = await ok(client, 'get_execution', { execution_id: id });
                        seen.push(`${s.status} ${s.elapsed_ms}ms ${JSON.stringify(s.stdout)}`);
                        if (s.stdout.includes('tick 1')) partial = s;
                        return !!partial || s.status !== 'running';
                    }, 60000, 'the first tick');
                    assert.ok(partial, `tick 1 was never seen while running: ${seen.join('\n')}`);
                    assert.equal(partial.status, 'running', show(partial));
                    assert.ok(!partial.stdout.includes('tick 6'), `the last tick is not there yet: ${show(partial)}`);
                    assert.ok(full.startsWith(partial.stdout), show(partial));
                    assert.equal(partial.stdout_bytes, Buffer.byteLength(partial.stdout), show(partial));
                    assert.equal(partial.stdout_offset, 0);
                    assert.ok(!partial.result, 'no result while running');
                    assert.ok(!partial.ended_at, 'no ended_at while running');

                    // The long poll answers when it ends, with the whole result.
                    const waitStart = Date.now();
                    const done = await ok(client, 'get_execution', { execution_id: id, wait_seconds: 20 });
                    const waited = Date.now() - waitStart;
                    assert.equal(done.status, 'finished', `after waiting ${waited} ms: ${show(done)}`);
                    assert.equal(done.stdout, full, show(done));
                    assert.equal(done.stdout_bytes, full.length);
                    assert.ok(done.ended_at, show(done));
                    assert.ok(done.result, `the whole result: ${show(done)}`);
                    assert.equal(done.result.status, 'ok', show(done));
                    assert.equal(done.result.exit_code, 0, show(done));
                    assert.equal(done.result.stdout, full, show(done));
                    assert.ok(done.result.duration_ms >= 5000, `duration_ms ${done.result.duration_ms}`);
                    assert.ok(waited < 20000, `the long poll returned at the end (${waited} ms), not at wait_seconds`);

                    // Offsets: only what was not seen yet.
                    const rest = await ok(client, 'get_execution', { execution_id: id, stdout_offset: partial.stdout_bytes });
                    assert.equal(rest.stdout_offset, partial.stdout_bytes, show(rest));
                    assert.equal(rest.stdout, full.slice(partial.stdout_bytes), show(rest));
                    assert.equal(partial.stdout + rest.stdout, full);
                    const none = await ok(client, 'get_execution', { execution_id: id, stdout_offset: done.stdout_bytes, stderr_offset: 0 });
                    assert.equal(none.stdout, '', show(none));
                    assert.equal(none.status, 'finished');

                    // Errors, as isError results.
                    assertToolError(await call(client, 'cancel_execution', { execution_id: id }), /already ended/i, 'cancel_execution of a finished execution');
                    assertToolError(await call(client, 'get_execution', { execution_id: 'exec-00000000000000ff' }), /unknown execution/i, 'get_execution of an unknown id');
                    assertToolError(await call(client, 'cancel_execution', { execution_id: 'no-such-execution' }), /unknown execution/i, 'cancel_execution of an unknown id');
                    assertToolError(await call(client, 'get_execution', { execution_id: id, wait_seconds: 61 }), /wait_seconds.*maximum.*60/i, 'wait_seconds above the maximum');

                    // Listed, without output.
                    const { executions } = await ok(client, 'list_executions', {});
                    const listed = executions.find((x) => x.execution_id === id);
                    assert.ok(listed, `${id} listed: ${JSON.stringify(executions).slice(0, 2000)}`);
                    assert.equal(listed.status, 'finished');
                    assert.equal(listed.language, 'bash');
                    assert.equal(listed.stdout_bytes, full.length);
                    assert.equal(listed.stdout, '');

                    // cancel_execution of a running one stops it and keeps its output.
                    const owner = conn.pid ?? http.server.proc.pid;
                    const marker = uniqueSleep60();
                    const long = await ok(client, 'start_execution', { language: 'bash', code: `echo started; ${marker}` });
                    let xids = [];
                    await waitFor(async () => (xids = await containersRunning(owner, marker)).length > 0, 60000, 'the execution to start');
                    const cancelAt = Date.now();
                    const stopped = await ok(client, 'cancel_execution', { execution_id: long.execution_id });
                    const answeredIn = Date.now() - cancelAt;
                    assert.equal(stopped.status, 'cancelled', show(stopped));
                    assert.equal(stopped.stdout, 'started\n', show(stopped));
                    stoppedExecution = stopped;
                    await waitFor(async () => {
                        const left = await containersOf(owner);
                        return xids.every((x) => !left.some((l) => x.startsWith(l) || l.startsWith(x)));
                    }, 20000, `the cancelled execution's sandbox ${xids} to go`);
                    note(`${combo}: cancel_execution: answered in ${answeredIn} ms, sandbox seen gone ${Date.now() - cancelAt} ms after the call`);
                    const again = await ok(client, 'get_execution', { execution_id: long.execution_id });
                    assert.equal(again.status, 'cancelled');
                    assert.equal(again.stdout, 'started\n');
                });

                // A cancelled run's result counts what it printed and how long
                // it ran, like the execution's own counters.
                it('a cancelled execution\'s result counts the output it kept', () => {
                    assert.ok(stoppedExecution?.result, 'the executions test cancelled an execution');
                    const r = stoppedExecution.result;
                    assert.equal(r.stdout, 'started\n', show(stoppedExecution));
                    assert.equal(r.stdout_bytes, Buffer.byteLength(r.stdout), `result.stdout_bytes vs result.stdout: ${show(stoppedExecution)}`);
                    assert.equal(r.stdout_bytes, stoppedExecution.stdout_bytes, show(stoppedExecution));
                    assert.ok(r.duration_ms > 0, `duration_ms ${r.duration_ms}`);
                });

                if (transport === 'http' && era.era === 'modern') {
                    it('a 2-minute run through start_execution and get_execution long polls', { timeout: 480000 }, async (t) => {
                        if (!needLanguage(t, langs, 'bash')) return;
                        const outcome = await twoMinuteRun;
                        if (outcome.error) throw outcome.error;
                        const { took, polls, last, streamed } = outcome;
                        note(`${combo}: 2-minute execution: ${took} ms, polls ${polls.join(' ')}`);
                        assert.equal(last.status, 'finished', `after ${took} ms: ${show(last)}`);
                        const want = Array.from({ length: 120 }, (_, i) => `${i + 1}\n`).join('');
                        assert.equal(last.result?.status, 'ok', show(last));
                        assert.equal(last.result.timed_out, false, show(last));
                        assert.equal(last.result.stdout.split('\n').filter(Boolean).length, 120, show(last));
                        assert.equal(last.result.stdout, want);
                        assert.equal(streamed, want, 'the output read through offsets');
                        assert.ok(polls.length >= 4, `several long polls: ${polls.join(' ')}`);
                    });
                }

                it('sessions: state, binary files, a plot as an image, list and close', { timeout: 300000 }, async (t) => {
                    if (!needLanguage(t, langs, 'python')) return;
                    // The operator's most (60 s), not the default 10 s: importing matplotlib
                    // in a session takes longer than 10 s on a loaded machine.
                    const s = await ok(client, 'create_session', { language: 'python' });
                    const sid = s.session_id;
                    assert.ok(sid, show(s));
                    assert.equal(s.language, 'python');
                    assert.equal(s.stateful, true, show(s));
                    let closed = false;
                    try {
                        const a = await ok(client, 'run_code', { language: 'python', session_id: sid, timeout_seconds: 60, code: 'x = 41' });
                        assert.equal(a.status, 'ok', show(a));
                        const b = await ok(client, 'run_code', { language: 'python', session_id: sid, timeout_seconds: 60, code: 'x + 1' });
                        assert.equal(b.status, 'ok', show(b));
                        assert.equal(b.value, '42', show(b));

                        // Binary round trip: every byte value, invalid UTF-8 included.
                        const bytes = Buffer.concat([Buffer.from([0x89, 0x00, 0xff, 0xfe, 0xc3, 0x28]), Buffer.from(Array.from({ length: 256 }, (_, i) => i)), randomBytes(4096)]);
                        const sha = createHash('sha256').update(bytes).digest('hex');
                        const w = await ok(client, 'write_file', { session_id: sid, path: 'data/blob.bin', content: bytes.toString('base64'), encoding: 'base64' });
                        assert.equal(w.size, bytes.length, show(w));
                        assert.equal(w.sha256, sha, show(w));
                        const rd = await ok(client, 'read_file', { session_id: sid, path: 'data/blob.bin' });
                        assert.equal(rd.encoding, 'base64', show({ ...rd, content: rd.content?.slice(0, 100) }));
                        assert.ok(Buffer.from(rd.content, 'base64').equals(bytes), 'read_file returns the very bytes written');
                        assert.equal(rd.sha256, sha);
                        assert.equal(rd.size, bytes.length);
                        // The program sees them too.
                        const seen = await ok(client, 'run_code', { language: 'python', session_id: sid, timeout_seconds: 60, code: "import hashlib\nhashlib.sha256(open('data/blob.bin','rb').read()).hexdigest()" });
                        assert.equal(seen.value, `'${sha}'`, show(seen));

                        // A figure left open by a cell comes back as a PNG image block.
                        const plot = await call(client, 'run_code', { language: 'python', session_id: sid, timeout_seconds: 60, code: 'import matplotlib.pyplot as plt; plt.plot([1,2,3])' });
                        const pr = structured(plot);
                        assert.equal(pr.status, 'ok', show(pr));
                        const images = plot.content.filter((c) => c.type === 'image');
                        assert.equal(images.length, 1, `one image block: ${JSON.stringify(plot.content.map((c) => ({ ...c, data: c.data?.slice(0, 40), text: c.text?.slice(0, 300) })))}`);
                        assert.equal(images[0].mimeType, 'image/png');
                        const png = Buffer.from(images[0].data, 'base64');
                        assert.ok(png.length > 1000, `PNG of ${png.length} bytes`);
                        assert.ok(png.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])), 'PNG signature');
                        assert.ok((pr.artifacts ?? []).some((f) => /\.png$/.test(f.path) && f.mime_type === 'image/png'), `the figure is an artifact: ${show(pr)}`);
                        assert.ok(!JSON.stringify(pr).includes(images[0].data.slice(0, 64)), 'the image data is kept out of the structured JSON');

                        const { sessions } = await ok(client, 'list_sessions', {});
                        const listed = sessions.find((x) => x.session_id === sid);
                        assert.ok(listed, `${sid} listed: ${JSON.stringify(sessions)}`);
                        assert.equal(listed.language, 'python');
                        assert.ok(listed.calls >= 4, show(listed));

                        const c = await ok(client, 'close_session', { session_id: sid });
                        assert.equal(c.session_id, sid);
                        closed = true;
                        const afterList = await ok(client, 'list_sessions', {});
                        assert.ok(!afterList.sessions.some((x) => x.session_id === sid), `${sid} no longer listed`);
                        assertToolError(await call(client, 'run_code', { language: 'python', session_id: sid, code: 'x' }), /session/i, 'run_code in a closed session');
                    } finally {
                        if (!closed) await call(client, 'close_session', { session_id: sid }).catch(() => {});
                    }
                });
            });
        }
    });
}

after(async () => {
    if (measured.length) console.log(`# measured:\n${measured.map((m) => `#   ${m}`).join('\n')}`);
    await assertNoLeftoverContainers();
});
