// The warm Node.js preload: a warm sandbox starts `node --require THIS
// /workspace/main.js` before its job, so the job's run stage does not pay for
// Node's start (about 60 ms of an 80 ms hello world). Node loads this file
// after its own start and before it resolves main.js, and it blocks here on
// fd 3 until the run command comes (NUL-terminated fields: the working
// directory, the index of the script in the command, then the command's
// words). By then the job's files are written. Node started in this file's
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
  const chunks = [];
  const buf = Buffer.allocUnsafe(65536);
  for (;;) {
    const n = fs.readSync(3, buf, 0, buf.length, null);
    if (n === 0) break;
    chunks.push(Buffer.from(buf.subarray(0, n)));
  }
  fs.closeSync(3);
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
