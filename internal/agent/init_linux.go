package agent

import (
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The agent runs as the sandbox's first process (PID 1), in place of a
// separate init, so that no process it does not control holds the
// container's output stream, and it makes itself non-dumpable: the program,
// though it runs as the same user, can then neither open the agent's file
// descriptors (/proc/1/fd) nor its memory, nor trace it, and so cannot forge
// frames. As PID 1 it also reaps the orphans the program leaves behind.

var (
	// startMu is held while a process is started and registered, so the
	// reaper never takes the exit status that exec.Cmd.Wait expects.
	startMu sync.Mutex
	tracked = map[int]bool{}
)

// startTracked starts cmd and registers it as a child the agent waits for
// itself. Its processes are also made the first the OOM killer picks: the
// agent raises its own oom_score_adj for the moment of the fork, so the child
// has the value from its first instruction (children inherit it), then lowers
// it back. Writing the child's value after the start, as a fallback, races
// with what the child forks first.
func startTracked(cmd *exec.Cmd) error {
	startMu.Lock()
	defer startMu.Unlock()
	// A failed raise falls back to writing the child's score.
	raised := oomInherit() && setOwnOOMScore("1000") == nil
	err := cmd.Start()
	if raised {
		_ = setOwnOOMScore(agentOOMScore)
	}
	if err != nil {
		return err
	}
	tracked[cmd.Process.Pid] = true
	if !raised {
		_ = os.WriteFile("/proc/"+strconv.Itoa(cmd.Process.Pid)+"/oom_score_adj", []byte("1000"), 0)
	}
	return nil
}

const ownOOMScoreAdj = "/proc/self/oom_score_adj"

var (
	// ownOOM is the agent's own oom_score_adj, opened by BecomeInit before
	// the agent makes itself non-dumpable: after that, /proc/self belongs
	// to root and the file can no longer be opened for writing.
	ownOOM        *os.File
	agentOOMScore string
	oomInherit    = sync.OnceValue(checkOOMInherit)
)

func setOwnOOMScore(v string) error {
	if ownOOM == nil {
		return errors.New("own oom_score_adj not open")
	}
	_, err := ownOOM.WriteAt([]byte(v), 0)
	return err
}

// checkOOMInherit reports whether the agent may raise its own oom_score_adj
// and lower it back (an unprivileged process may lower it only down to the
// value a privileged one last set). Only inside a sandbox: elsewhere the
// agent's own score is not its business.
func checkOOMInherit() bool {
	if !KillStragglers || ownOOM == nil {
		return false
	}
	cur := make([]byte, 16)
	n, err := ownOOM.ReadAt(cur, 0)
	if n == 0 && err != nil {
		return false
	}
	agentOOMScore = strings.TrimSpace(string(cur[:n]))
	if setOwnOOMScore("1000") != nil {
		return false
	}
	if setOwnOOMScore(agentOOMScore) != nil {
		return false // stuck high: that is what the check is for; a sandbox this happens in dies with its run
	}
	return true
}

// untrack forgets a child once exec.Cmd.Wait has reaped it.
func untrack(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	startMu.Lock()
	delete(tracked, cmd.Process.Pid)
	startMu.Unlock()
}

// BecomeInit prepares the agent to be the sandbox's PID 1: not dumpable,
// deaf to the termination signals a program could send it, reaping orphans,
// and holding spare OS threads so that a fork bomb at the pids limit cannot
// stop it from creating the few it needs.
func BecomeInit() {
	if KillStragglers {
		ownOOM, _ = os.OpenFile(ownOOMScoreAdj, os.O_RDWR, 0)
	}
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU,
		// Fault signals sent with kill(2) would otherwise crash the Go
		// runtime; real faults still panic. (Queued ones, with a forged
		// siginfo, still reach the runtime: a residual risk, see SECURITY.md.)
		syscall.SIGILL, syscall.SIGTRAP, syscall.SIGABRT, syscall.SIGBUS, syscall.SIGFPE, syscall.SIGSEGV, syscall.SIGSTKFLT, syscall.SIGSYS)
	prewarmThreads(16)
	if os.Getpid() == 1 {
		go reapOrphans()
	}
}

// prewarmThreads makes the runtime create n OS threads now, by blocking n
// goroutines in system calls at once; the threads stay for later use.
func prewarmThreads(n int) {
	r, w, err := os.Pipe()
	if err != nil {
		return
	}
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			var b [1]byte
			_, _ = syscall.Read(int(r.Fd()), b[:])
		})
	}
	time.Sleep(20 * time.Millisecond)
	_, _ = w.Write(make([]byte, n))
	wg.Wait()
	r.Close()
	w.Close()
}

// reapOrphans waits for the zombies the agent inherits as PID 1, leaving
// its own tracked children to exec.Cmd.Wait.
func reapOrphans() {
	sig := make(chan os.Signal, 16)
	signal.Notify(sig, syscall.SIGCHLD)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-sig:
		case <-tick.C:
		}
		reapOnce()
	}
}

func reapOnce() {
	startMu.Lock()
	defer startMu.Unlock()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == 1 || tracked[pid] {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(stat)
		i := strings.LastIndexByte(s, ')')
		if i < 0 || i+4 > len(s) {
			continue
		}
		fields := strings.Fields(s[i+1:])
		if len(fields) < 2 || fields[0] != "Z" || fields[1] != "1" {
			continue
		}
		var ws unix.WaitStatus
		_, _ = unix.Wait4(pid, &ws, unix.WNOHANG, nil)
	}
}
