# The warm Python interpreter: a warm sandbox starts it before its job, so
# the job's run stage does not pay for the interpreter's start (about 15 ms
# of a 20 ms hello world). It says on fd 3 that it has loaded (one byte),
# then waits there for the run command
# (NUL-terminated fields: the index of the script in the command, then the
# command's words), then runs the script as `python3 -u main.py ARGS` would:
# as the module __main__, with sys.argv, sys.path[0] and __file__ set the
# same way. The agent uses it only
# when the run stage's command, environment and directory are those it was
# started for; otherwise it starts python3 as usual.
import os as _os
import sys as _sys


def _mcr_run():
    # Loaded: one byte on fd 3 tells the agent so, and only then does it
    # tell the host the sandbox is ready for a job.
    try:
        _os.write(3, b"R")
    except OSError:
        pass
    chunks = []
    while True:
        chunk = _os.read(3, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    _os.close(3)
    fields = b"".join(chunks).split(b"\0")
    if fields and fields[-1] == b"":
        fields.pop()
    at = int(fields[0])
    argv = [_os.fsdecode(f) for f in fields[1:]]
    script = _os.path.abspath(argv[at])
    _sys.argv = argv[at:]
    _sys.orig_argv = argv
    _sys.path[0] = _os.path.dirname(script)
    main = type(_sys)("__main__")
    main.__file__ = script
    main.__cached__ = None
    main.__builtins__ = __builtins__
    _sys.modules["__main__"] = main
    try:
        with open(script, "rb") as f:
            code = compile(f.read(), script, "exec")
        exec(code, main.__dict__)
    except SystemExit:
        raise
    except BaseException:
        kind, value, tb = _sys.exc_info()
        # Leave this function's frame out of the traceback, as the
        # interpreter's own start leaves nothing above the script (the
        # exception's own __traceback__ is what gets printed).
        tb = tb.tb_next if tb is not None else None
        value.__traceback__ = tb
        _sys.excepthook(kind, value, tb)
        _sys.exit(1)


_mcr_run()
