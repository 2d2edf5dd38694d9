// The warm Node.js preload: a warm sandbox starts `node --require THIS
// /workspace/main.js` before its job, so the job's run stage does not pay for
// Node's start (about 60 ms of an 80 ms hello world). Node loads this file
// after its own start and before it resolves main.js; it writes one byte on
// fd 3, a socket to the agent, to say it has loaded, then blocks there
// until the run command comes (NUL-terminated
// fields: the working directory, the index of the script in the command,
// then the command's words). By then the job's files are written. Node started in this file's
// own directory, so that it read nothing of the workspace before the job's
// files were there; this moves it to the working directory, appends the
// command's arguments to process.argv, takes itself out of process.execArgv
// and require.cache, having removed its own files, and returns: Node then
// runs main.js itself, exactly as `node main.js ARGS` would (CommonJS or ESM,
// require.main, __filename, import.meta.url, stack traces, exit codes,
// unhandled rejections). The agent uses it only when the run stage's
// command, environment and directory are those it was started for.
'use strict';
{
  const fs = require('fs');
  const path = require('path');
  // The file is gone before any of the job's code runs.
  const dir = path.dirname(__filename);
  try {
    fs.unlinkSync(__filename);
    fs.unlinkSync(path.join(dir, 'package.json'));
    fs.rmdirSync(dir);
  } catch {}
  // Node makes process.stdout and process.stderr on first use, which would
  // cost the run most of what is left of Node's start (about 15 ms of CPU of
  // 20 for a hello world): made here, before the job, they are the objects
  // the program would have made itself on its first write.
  process.stdout;
  process.stderr;
  // A program's first console.log loads and compiles the parts of Node it
  // goes through (the console's formatting, the colour checks, a stream's
  // write down to the pipe): about 1.2 of the 3 ms a warm hello world's
  // program took from its command to its exit. They run here first, on
  // nothing the program sees: a console of its own writing to a stream that
  // drops what it gets, and writes of no bytes to stdout and stderr (a
  // pipe's reader gets nothing from them). The callbacks those writes leave
  // on the next-tick queue run here too: left there, they would run just
  // before the program's first promise jobs, and an error thrown in an ES
  // module would show a processTicksAndRejections frame that `node main.mjs`
  // does not print.
  {
    const { Writable } = require('stream');
    const { Console } = require('console');
    const sink = new Writable({ write(chunk, encoding, done) { done(); } });
    const warmConsole = new Console({ stdout: sink, stderr: sink });
    warmConsole.log('%s %d', 'warm', 1, { warm: [1] });
    warmConsole.error('warm');
    process.stdout.write('');
    process.stderr.write('');
    if (typeof process._tickCallback === 'function') process._tickCallback();
  }
  // When the program's event loop runs dry, Node emits 'exit', then frees
  // the whole environment and the V8 heap, and the kernel then takes the
  // process's memory apart: most of a warm hello world's time, and none of
  // it visible to the program (its 'exit' listeners have run; its writes
  // to stdout and stderr, pipes here, are synchronous). This listener, the
  // first, acts only on that emit, the one Node makes with nothing of
  // JavaScript below it (not process.exit()'s, not an uncaught exception's,
  // after which Node prints the error, nor the program's own): it takes
  // itself out, runs the program's listeners after it in order with the
  // same code, as the emit would have, closes stdout and stderr and
  // reports the exit code they leave to the agent on fd 3, which answers
  // at once; then it ends the process as process.exit() does. What remains
  // visible to the program: one more 'exit' listener, and fd 3 open.
  const ourFrame = /^\s+at process\.mcrExitWithoutTeardown \(.*\)\n/m;
  process.on('exit', function mcrExitWithoutTeardown(code) {
    if (!emittedByNode(mcrExitWithoutTeardown)) return;
    const listeners = process.rawListeners('exit');
    process.removeListener('exit', mcrExitWithoutTeardown);
    let ran = false;
    try {
      for (const listener of listeners.slice(listeners.indexOf(mcrExitWithoutTeardown) + 1)) {
        Reflect.apply(listener, process, [code]);
      }
      ran = true;
    } finally {
      // A listener threw: the error goes on (from here, so that Node
      // still points at the line that threw it) and is printed as it would
      // have been, without this frame.
      if (!ran) {
        const lone = listeners.length === 2;
        process.once('uncaughtExceptionMonitor', (err) => {
          if (err instanceof Error && typeof err.stack === 'string') err.stack = asIfEmittedByNode(err.stack.replace(ourFrame, ''), lone);
        });
      }
    }
    const exitCode = Number(process.exitCode ?? 0);
    if (Number.isInteger(exitCode)) reportExit(control, exitCode & 0xff);
    process.exit();
  });
  // fd 3, a socket to the agent, stays open for the exit report; its
  // identity is kept to find it again.
  const control = fs.fstatSync(3);
  // V8 compiles a function the first time it runs: what the job's command
  // and the exit report below go through runs once here, on nothing (the
  // working directory changed to /, this file's directory being gone, a
  // descriptor of /dev/null closed). About 1.2 ms of a warm hello world's
  // program otherwise.
  Buffer.concat([Buffer.from('warm\0')]).toString('utf8').split('\0');
  process.chdir('/');
  try {
    fs.closeSync(fs.openSync('/dev/null', 'r'));
  } catch {}
  process.resourceUsage();
  emittedByNode(emittedByNode);
  // Loaded: one byte on fd 3 tells the agent so, and only then does it
  // tell the host the sandbox is ready for a job.
  try {
    fs.writeSync(3, 'R');
  } catch {}
  const chunks = [];
  const buf = Buffer.allocUnsafe(65536);
  for (;;) {
    const n = fs.readSync(3, buf, 0, buf.length, null);
    if (n === 0) break;
    chunks.push(Buffer.from(buf.subarray(0, n)));
  }
  // The working directory, then the index of the script in the command,
  // then the command's words.
  const fields = Buffer.concat(chunks).toString('utf8').split('\0');
  fields.pop(); // after the last NUL
  if (fields.length < 3) process.exit(127); // the agent stopped it
  process.chdir(fields[0]);
  const at = Number(fields[1]);
  process.argv.push(...fields.slice(at + 3));
  const self = process.execArgv.indexOf(__filename);
  if (self > 0) process.execArgv.splice(self - 1, 2);
  delete require.cache[__filename];
}

// emittedByNode reports whether the emit that called listener was made by
// Node itself, with no JavaScript frame below it; when the stack cannot be
// read that way it answers false, which keeps Node's own exit.
function emittedByNode(listener) {
  const { prepareStackTrace, stackTraceLimit } = Error;
  const own = Object.hasOwn(Error, 'prepareStackTrace');
  try {
    Error.stackTraceLimit = 3;
    Error.prepareStackTrace = (_, frames) => frames.length;
    const holder = {};
    Error.captureStackTrace(holder, listener);
    return holder.stack === 1; // process.emit alone
  } catch {
    return false;
  } finally {
    if (own) Error.prepareStackTrace = prepareStackTrace;
    else delete Error.prepareStackTrace;
    Error.stackTraceLimit = stackTraceLimit;
  }
}

// reportExit closes stdout and stderr, so that the agent has read to their
// end, and sends it the exit code and the process's peak resident size in
// KiB on fd 3, if fd 3 is still the agent's socket. The peak is read here
// because the agent's own read of /proc can come after process.exit() has
// begun releasing the memory, when the kernel no longer shows it.
function reportExit(control, code) {
  const fs = require('fs');
  try {
    const now = fs.fstatSync(3);
    if (!now.isSocket() || now.ino !== control.ino || now.dev !== control.dev) return;
    fs.closeSync(1);
    fs.closeSync(2);
    let peak = 0;
    try {
      peak = Math.max(0, Math.trunc(process.resourceUsage().maxRSS));
    } catch {}
    fs.writeSync(3, `${code} ${peak}\n`);
  } catch {}
}

// asIfEmittedByNode makes the process.emit frame of a stack read as Node's
// own emit would have: a lone listener is called from another line of the
// events module than one of several, and the emit that ran the program's
// listener had this preload's as well.
function asIfEmittedByNode(stack, lone) {
  if (!lone) return stack;
  const [one, several] = [1, 2].map(emitCallSite);
  if (!one || !several) return stack;
  return stack.replace(`at process.emit (${several})`, `at process.emit (${one})`);
}

// emitCallSite is where an EventEmitter's emit calls a listener when it has
// n of them, as a stack frame shows it ("node:events:LINE:COLUMN").
function emitCallSite(n) {
  const { EventEmitter } = require('events');
  const e = new EventEmitter();
  let site;
  for (let i = 0; i < n; i++) {
    e.on('x', () => {
      site ??= /\((node:events:\d+:\d+)\)/.exec(new Error().stack.split('\n')[2] ?? '')?.[1];
    });
  }
  e.emit('x');
  return site;
}
