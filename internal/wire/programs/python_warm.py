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
#
# When the script ends (returns, sys.exit, or an uncaught exception), this
# does what the interpreter's exit does that a program can see, in its
# order: it waits for the threads that are not daemons, runs the atexit
# callbacks, clears the script's own modules (__main__ and those imported
# from the working directory) as the interpreter's teardown does, so that
# their objects' __del__ methods run and the files they left open are
# flushed and closed, collects the garbage, and flushes stdout and stderr.
# Then it reports the exit code on fd 3 (the agent answers at once) and
# ends the process without the rest of the teardown, which nothing can see:
# freeing every object, module and the interpreter itself (most of a warm
# hello world's time). What this does not repeat is left to the
# interpreter's own exit, unreported: a KeyboardInterrupt (the interpreter
# ends the process with SIGINT), a SystemExit whose code is not an integer
# of a C int's range, and a program that closed fd 3. Objects that only
# library modules hold are not finalized (the teardown would run their
# __del__ methods too).
import os as _os
import sys as _sys


def _mcr_run():
    # Before the job, two costs of a run that do not depend on it. The
    # process's first compile() sets up the compiler (0.8 of a hello world's
    # 2.8 ms here): one of a line of code does it now. And the collections
    # of the exit below would traverse every object of the interpreter's
    # start (1 ms): gc.freeze() moves those to the permanent generation,
    # which collections leave alone, so that they traverse the program's
    # objects only. The cost: an object of the interpreter's start that the
    # program lets go of in a reference cycle is not collected while the
    # program runs, nor finalized at its end (as objects only library
    # modules hold are not: see above); gc.get_freeze_count() counts them.
    compile("print('')\n", "<warm>", "exec")
    import gc

    gc.freeze()
    del gc
    # Loaded: one byte on fd 3 tells the agent so, and only then does it
    # tell the host the sandbox is ready for a job.
    try:
        _os.write(3, b"R")
    except OSError:
        pass
    # fd 3 stays open for the report; the program's children do not get it.
    _os.set_inheritable(3, False)
    control = _os.fstat(3)
    chunks = []
    while True:
        chunk = _os.read(3, 65536)
        if not chunk:
            break
        chunks.append(chunk)
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
    except SystemExit as e:
        # The interpreter's handling: None is 0, an integer the status as
        # exit(3) takes it; anything else is the interpreter's to print.
        if e.code is None:
            status = 0
        elif isinstance(e.code, int) and -(1 << 31) <= e.code < (1 << 31):
            status = e.code & 0xFF
        else:
            raise
    except KeyboardInterrupt as e:
        # The interpreter prints it and ends the process with SIGINT: left
        # to it, printed without this function's frame.
        _mcr_print_uncaught_as_raised(e)
        raise
    except BaseException:
        kind, value, tb = _sys.exc_info()
        # Leave this function's frame out of the traceback, as the
        # interpreter's own start leaves nothing above the script (the
        # exception's own __traceback__ is what gets printed).
        tb = tb.tb_next if tb is not None else None
        value.__traceback__ = tb
        # Where the interpreter keeps an uncaught exception for the atexit
        # callbacks to see.
        _sys.last_type, _sys.last_value, _sys.last_traceback = kind, value, tb
        if _sys.version_info >= (3, 12):
            _sys.last_exc = value
        _sys.excepthook(kind, value, tb)
        del kind, value, tb
        status = 1
    else:
        status = 0
    # Nothing here holds the script's module or objects any more.
    main = code = None
    _mcr_exit(status, _sys.path[0], control)


def _mcr_print_uncaught_as_raised(e):
    tb = e.__traceback__.tb_next if e.__traceback__ is not None else None
    hook = _sys.excepthook

    def once(kind, value, _):
        # The traceback printed is the exception's own.
        _sys.excepthook = hook
        value.__traceback__ = tb
        hook(kind, value, tb)

    _sys.excepthook = once


def _mcr_exit(status, workdir, control):
    import gc

    threading = _sys.modules.get("threading")
    if threading is not None:
        threading._shutdown()
    import atexit

    atexit._run_exitfuncs()
    # The teardown lets go of the uncaught exception (and so of its frames'
    # objects) before it clears the modules.
    for name in ("last_exc", "last_type", "last_value", "last_traceback"):
        if hasattr(_sys, name):
            setattr(_sys, name, None)
    _mcr_remove_modules(workdir.rstrip("/") + "/", gc)
    for stream in (_sys.stdout, _sys.stderr):
        try:
            if stream is not None and not getattr(stream, "closed", False):
                stream.flush()
        except Exception:
            if stream is _sys.stdout:
                status = 120
    try:
        same = _os.path.samestat(_os.fstat(3), control)
    except OSError:
        same = False
    if same:
        # The report: the code, the peak resident size in KiB and the CPU
        # time in ms (the process is gone before the agent could read them
        # in /proc). stdout and stderr are closed first, so that the agent
        # has read all of them when it answers.
        report = b"%d %d %d\n" % (status, _mcr_peak_kib(), _mcr_cpu_ms())
        try:
            _os.close(1)
            _os.close(2)
        except OSError:
            pass
        try:
            _os.write(3, report)
            _os._exit(status)
        except OSError:
            pass
    # fd 3 is not ours any more (the program closed or reused it): the
    # interpreter's own exit, without a report.
    _sys.exit(status)


def _mcr_remove_modules(prefix, gc):
    # The teardown's steps for the script's modules (__main__ and those of
    # the working directory): each set to None in sys.modules, the garbage
    # collected (the objects of modules no longer held are finalized, their
    # __del__ methods run, in the collector's order), then the namespace of
    # each module still alive cleared, newest first, in two passes (the
    # names with one leading underscore, then the others but
    # __builtins__, set to None), and the garbage collected again.
    import _weakref

    # Names, not modules, are listed first: a module no longer held goes
    # (its dict's values in order) as soon as sys.modules lets go of it, as
    # in the teardown.
    names = [name for name, m in list(_sys.modules.items())
             if name == "__main__" or str(getattr(m, "__file__", None) or "").startswith(prefix)]
    # The namespace of a module in a reference cycle (one that defines a
    # function or a class) is left to the collector, which finalizes the
    # file objects in it in no set order: a buffered file closed before the
    # text file above it loses what the text file held. The teardown's
    # collection keeps that; here the open files of the namespaces are
    # flushed first.
    io = _sys.modules.get("io")
    for name in names:
        for value in list(getattr(_sys.modules[name], "__dict__", {}).values()):
            if io is not None and isinstance(value, io.IOBase):
                try:
                    if not value.closed:
                        value.flush()
                except Exception:
                    pass
    value = None
    alive = []
    for name in names:
        m = _sys.modules[name]
        try:
            alive.append(_weakref.ref(m))
        except TypeError:
            pass
        _sys.modules[name] = None
        m = None
    gc.collect()
    cleared = False
    for ref in reversed(alive):
        d = getattr(ref(), "__dict__", None)
        if d is None:
            continue
        cleared = True
        for name in [n for n in d if n.startswith("_") and not n.startswith("__")]:
            d[name] = None
        for name in [n for n in d if n != "__builtins__"]:
            d[name] = None
    d = None
    if cleared:
        gc.collect()


def _mcr_peak_kib():
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _mcr_cpu_ms():
    t = _os.times()
    return int((t.user + t.system + t.children_user + t.children_system) * 1000)


_mcr_run()
