# The Python kernel of a mcp-code-runner session: a long-lived interpreter
# whose globals persist from cell to cell, like a notebook. The agent sends
# one JSON line per cell on fd 3; the kernel runs it, prints a marker on
# stdout and stderr once their output is flushed, then answers one JSON line
# on fd 4: ok, the repr of the last expression (if any) and an exit code.
import ast
import json
import os
import sys
import traceback

MARK = "\x00\x1eMCR-CELL-END\x1e\x00"
ctl = os.fdopen(3, "r", encoding="utf-8")
out = os.fdopen(4, "w", encoding="utf-8")
cell_globals = {"__name__": "__main__", "__builtins__": __builtins__}
workdir = os.getcwd()  # the session's workspace; a fork's is its own
forks = []  # the process ids of this interpreter's forks, to be reaped


def figure_path():
    n = 1
    while os.path.exists(os.path.join(workdir, "figure-%d.png" % n)):
        n += 1
    return os.path.join(workdir, "figure-%d.png" % n)


def fork(f):
    """Copy this interpreter: the copy leaves the agent's pipes for the
    FIFOs in f and works in f["dir"]; returns the copy's pid (0 in it)."""
    global workdir
    sys.stdout.flush()
    sys.stderr.flush()
    out.flush()
    pid = os.fork()
    if pid:
        forks.append(pid)
        return pid
    try:
        os.setsid()
        fds = [os.open(f["ctl"], os.O_RDONLY), os.open(f["res"], os.O_WRONLY),
               os.open(f["out"], os.O_WRONLY), os.open(f["err"], os.O_WRONLY)]
        for fd, target in zip(fds, (3, 4, 1, 2)):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(f["dir"])
    except BaseException:
        os._exit(1)  # never go on reading the original's pipes
    workdir = f["dir"]
    del forks[:]
    return 0


def reap_forks():
    for pid in forks[:]:
        try:
            if os.waitpid(pid, os.WNOHANG)[0]:
                forks.remove(pid)
        except ChildProcessError:
            forks.remove(pid)


def save_figures():
    """Save figures the cell left open as PNG files, as a notebook shows them."""
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return
    for num in plt.get_fignums():
        try:
            plt.figure(num).savefig(figure_path(), format="png")
        except Exception:
            traceback.print_exc()
    plt.close("all")


def run(code):
    tree = ast.parse(code, "<cell>", "exec")
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    exec(compile(tree, "<cell>", "exec"), cell_globals)
    if last is not None:
        value = eval(compile(last, "<cell>", "eval"), cell_globals)
        if value is not None:
            return repr(value)
    return None


for line in ctl:
    msg = json.loads(line)
    reap_forks()
    if "fork" in msg:
        try:
            pid = fork(msg["fork"])
        except OSError as e:
            print("fork: %s" % e, file=sys.stderr)
            out.write(json.dumps({"ok": False, "value": None, "exit_code": 1}) + "\n")
            out.flush()
            continue
        if pid:
            out.write(json.dumps({"ok": True, "value": str(pid), "exit_code": 0}) + "\n")
            out.flush()
        continue
    res = {"ok": True, "value": None, "exit_code": 0}
    try:
        res["value"] = run(msg["code"])
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if e.code is not None and not isinstance(e.code, int):
            print(e.code, file=sys.stderr)
        res.update(ok=code == 0, exit_code=code)
    except BaseException:
        etype, evalue, tb = sys.exc_info()
        # Drop the kernel's own frame from the traceback.
        traceback.print_exception(etype, evalue, tb.tb_next if tb else None)
        res.update(ok=False, exit_code=1)
    try:
        save_figures()
    except BaseException:
        traceback.print_exc()
    if res["value"] is not None and len(res["value"]) > 65536:
        res["value"] = res["value"][:65536] + "... [truncated]"
    sys.stdout.flush()
    sys.stderr.flush()
    sys.stdout.write(MARK)
    sys.stderr.write(MARK)
    sys.stdout.flush()
    sys.stderr.flush()
    out.write(json.dumps(res) + "\n")
    out.flush()
