// The MCP Inspector CLI (@modelcontextprotocol/inspector, run with npx on
// Node 22) against the server binary: tools/list and a run_code call over
// stdio, and a run_code call over Streamable HTTP in each protocol era.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';

import { BIN, IS_CI, startHttpServer, show, assertNoLeftoverContainers } from '../lib/harness.mjs';

const INSPECTOR = '@modelcontextprotocol/inspector@2.12.0';
const NODE = 'node@22';

// The first npx run may download Node 22 and the Inspector: allow for it.
const NPX_TIMEOUT_MS = Number(process.env.MCR_NPX_TIMEOUT_MS ?? 600000);

/**
 * The engine settings of this run, as -e flags for the server the Inspector
 * starts: it gives a stdio server only a default environment, which would
 * send the server to the system's Docker whatever engine the run is for.
 */
const SERVER_ENV = ['DOCKER_HOST', 'MCR_ALLOW_UNENFORCED_LIMITS']
    .filter((k) => process.env[k]).flatMap((k) => ['-e', `${k}=${process.env[k]}`]);

/** Runs the Inspector CLI; resolves { code, stdout, stderr }. */
function inspector(args, timeout = NPX_TIMEOUT_MS) {
    return new Promise((resolve) => {
        execFile(
            'npx',
            ['-y', '-p', NODE, '-p', INSPECTOR, '--', 'mcp-inspector', '--cli', ...SERVER_ENV, ...args],
            {
                timeout,
                killSignal: 'SIGKILL',
                maxBuffer: 64 << 20,
                env: { ...process.env, npm_config_yes: 'true', npm_config_update_notifier: 'false', npm_config_fund: 'false' },
            },
            (err, stdout, stderr) => resolve({ code: err ? (err.code ?? err.signal ?? 1) : 0, stdout, stderr, err }),
        );
    });
}

/** Parses the Inspector's --format json output: one JSON object on stdout. */
function parse(res, what) {
    const diag = `${what}: exit ${res.code}\n--- stdout ---\n${res.stdout.slice(0, 4000)}\n--- stderr ---\n${res.stderr.slice(-4000)}`;
    assert.equal(res.code, 0, diag);
    let out;
    try {
        out = JSON.parse(res.stdout);
    } catch {
        assert.fail(`not JSON: ${diag}`);
    }
    assert.ok(out.result, diag);
    return out.result;
}

/** Output of a failed npm download (not a failure of the server). */
function npmFetchFailed(res) {
    return res.code !== 0 && /npm (ERR|error)[\s\S]*(ENOTFOUND|EAI_AGAIN|ETIMEDOUT|ECONNRESET|ECONNREFUSED|network)/i.test(res.stderr);
}

const RUN_ARGS = JSON.stringify({ language: 'bash', code: 'echo "inspector says $1"; exit 7', args: ['hi'] });

function checkRun(result) {
    assert.ok(!result.isError, JSON.stringify(result));
    const s = result.structuredContent;
    assert.ok(s, `structuredContent: ${JSON.stringify(result)}`);
    assert.equal(s.status, 'error', show(s));
    assert.equal(s.exit_code, 7, show(s));
    assert.equal(s.stdout, 'inspector says hi\n', show(s));
}

describe('MCP Inspector CLI', () => {
    let ready = true;
    before(async () => {
        // Fetch Node 22 and the Inspector once, with the time it needs.
        const res = await inspector(['--version']);
        if (res.code !== 0) {
            if (!IS_CI && npmFetchFailed(res)) {
                ready = false;
                return;
            }
            assert.fail(`npx could not run the Inspector (exit ${res.code}):\n${res.stderr.slice(-4000)}`);
        }
    });
    const needInspector = (t) => {
        if (!ready) t.skip('npx could not download the Inspector (network) and CI is not "true"');
        return ready;
    };

    it('lists the tools over stdio', async (t) => {
        if (!needInspector(t)) return;
        const result = parse(await inspector(['--method', 'tools/list', '--format', 'json', '--', BIN, 'serve']), 'tools/list');
        const names = result.tools.map((x) => x.name);
        for (const want of ['list_languages', 'run_code']) assert.ok(names.includes(want), `${want} in ${names}`);
        const run = result.tools.find((x) => x.name === 'run_code');
        assert.ok(run.inputSchema.properties.language);
        assert.ok(run.outputSchema.properties.status);
    });

    for (const era of ['legacy', 'modern']) {
        it(`calls run_code over stdio (${era} era)`, async (t) => {
            if (!needInspector(t)) return;
            const res = await inspector(['--method', 'tools/call', '--tool-name', 'run_code', '--tool-args-json', RUN_ARGS,
                '--protocol-era', era, '--format', 'json', '--', BIN, 'serve']);
            checkRun(parse(res, 'tools/call'));
        });
    }

    describe('over Streamable HTTP', () => {
        let server;
        before(async () => {
            if (ready) server = await startHttpServer();
        });
        after(async () => {
            if (server) {
                const exit = await server.stop();
                assert.deepEqual(exit, { code: 0, signal: null }, server.logs());
            }
        });
        for (const era of ['legacy', 'modern']) {
            it(`calls run_code (${era} era)`, async (t) => {
                if (!needInspector(t)) return;
                const res = await inspector(['--method', 'tools/call', '--tool-name', 'run_code', '--tool-args-json', RUN_ARGS,
                    '--protocol-era', era, '--format', 'json', server.url]);
                checkRun(parse(res, 'tools/call'));
            });
        }
    });
});

after(async () => {
    await assertNoLeftoverContainers();
});
