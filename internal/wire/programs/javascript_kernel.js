// The JavaScript kernel of a mcp-code-runner session: a long-lived Node.js
// whose global scope persists from cell to cell, like a notebook. The agent
// sends one JSON line per cell on fd 3; the kernel runs it, writes a marker
// on stdout and stderr (synchronous pipes on Linux), then answers one JSON
// line on fd 4: ok, the inspected value of the last expression, exit code.
'use strict';
const fs = require('fs');
const vm = require('vm');
const util = require('util');

const MARK = '\x00\x1eMCR-CELL-END\x1e\x00';
globalThis.require = require;
globalThis.module = module;
globalThis.exports = module.exports;
globalThis.__dirname = '/workspace';
globalThis.__filename = '/workspace/cell.js';
process.chdir('/workspace');
process.on('uncaughtException', (e) => process.stderr.write(`Uncaught ${e && e.stack ? e.stack : util.inspect(e)}\n`));
process.on('unhandledRejection', (e) => process.stderr.write(`Unhandled rejection: ${e && e.stack ? e.stack : util.inspect(e)}\n`));

// Top-level let, const and class declarations (written at column 0) become
// var bindings, so that a later cell may declare the same name again, as
// notebook users do when they re-run a cell. Indented declarations, inside
// blocks and functions, keep their meaning.
function notebookScope(code) {
  return code
    .replace(/^(?:let|const)(\s)/gm, 'var$1')
    .replace(/^class\s+([A-Za-z_$][\w$]*)/gm, 'var $1 = class $1');
}

function evaluate(code) {
  return vm.runInThisContext(notebookScope(code), { filename: 'cell.js' });
}

async function handle(msg) {
  const res = { ok: true, value: null, exit_code: 0 };
  try {
    let v = evaluate(msg.code);
    if (v && typeof v.then === 'function') v = await v;
    if (v !== undefined) {
      res.value = util.inspect(v, { depth: 4, maxArrayLength: 200, maxStringLength: 65536 });
    }
  } catch (e) {
    res.ok = false;
    res.exit_code = 1;
    process.stderr.write(`${e && e.stack ? e.stack : 'Uncaught ' + util.inspect(e)}\n`);
  }
  process.stdout.write(MARK);
  process.stderr.write(MARK);
  fs.writeSync(4, JSON.stringify(res) + '\n');
}

let pending = '';
let queue = Promise.resolve();
fs.createReadStream(null, { fd: 3, encoding: 'utf8' }).on('data', (chunk) => {
  pending += chunk;
  let i;
  while ((i = pending.indexOf('\n')) >= 0) {
    const line = pending.slice(0, i);
    pending = pending.slice(i + 1);
    queue = queue.then(() => handle(JSON.parse(line)));
  }
});
