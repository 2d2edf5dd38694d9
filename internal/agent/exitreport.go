package agent

import (
	"bytes"
	"io"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// exitReportsRead counts the exit reports read, and exitReportReadsEnded
// the reads for one that ended, with a report or without. A stage ends on
// whichever comes first, the report or the process's exit (on a busy
// machine the exit can win); a test waits for the read to end to tell
// whether the interpreter reported.
var exitReportsRead, exitReportReadsEnded atomic.Int64

// stageUsage is what a stage's result takes from its process when the
// process reported its exit instead of being waited for.
type stageUsage struct {
	exitCode  int
	maxRSSKB  int64
	cpuTimeMs int64
}

// waitOrReport waits for the stage's process to exit, or, for a warm
// interpreter that reports its program's exit (stageProc.exitReport), for
// that report, whichever comes first. A report comes before the
// interpreter's own teardown, which the result then does not wait for
// (about 25 ms of a warm JavaScript hello world): the process is still
// alive, so its usage is read from /proc, and it is reaped in the
// background once the caller has killed it.
func waitOrReport(proc *stageProc) (reported bool, usage stageUsage, err error) {
	cmd := proc.cmd
	if proc.exitReport == nil {
		err = cmd.Wait()
		untrack(cmd)
		return false, stageUsage{}, err
	}
	defer proc.exitReport.Close()
	waited := make(chan error, 1)
	go func() {
		waited <- cmd.Wait()
		untrack(cmd)
	}()
	reports := make(chan exitReport, 1)
	readEnded := make(chan struct{})
	go func() {
		defer close(readEnded)
		defer exitReportReadsEnded.Add(1)
		if proc.readied != nil {
			<-proc.readied // its one byte comes before the report
		}
		if r, ok := readExitReport(proc.exitReport); ok {
			exitReportsRead.Add(1)
			reports <- r
		}
	}()
	select {
	case err = <-waited:
		// The exit came first (a busy machine): a report the process sent
		// before it is in the socket already, and the read ends at once,
		// with it or at the end of the stream. Only a child that kept the
		// socket open could hold the read: the deadline ends it. Closing
		// the socket under the read would drop a report that was sent.
		_ = proc.exitReport.SetReadDeadline(time.Now().Add(exitReportDrain))
		select {
		case <-readEnded:
		case <-time.After(2 * exitReportDrain):
		}
		return false, stageUsage{}, err
	case r := <-reports:
		usage = processUsage(cmd.Process.Pid)
		usage.exitCode = r.code
		// The interpreter's own reading of its peak comes before it began
		// to exit; /proc's can come after, when the memory is released
		// and the kernel shows none.
		usage.maxRSSKB = max(usage.maxRSSKB, r.maxRSSKB)
		usage.cpuTimeMs = max(usage.cpuTimeMs, r.cpuTimeMs)
		return true, usage, nil
	}
}

// exitReportDrain bounds the read of an exit report once the process has
// exited.
const exitReportDrain = time.Second

// exitReport is what a warm interpreter reports of its program's end.
type exitReport struct {
	code      int
	maxRSSKB  int64
	cpuTimeMs int64
}

// readExitReport reads an exit report: the code in decimal, 0 to 255, then
// optionally a space and the process's peak resident size in KiB, then
// optionally a space and its CPU time in milliseconds (an interpreter that
// ends itself at once after the report, before the agent could read /proc),
// and a newline. Anything else is no report.
func readExitReport(r io.Reader) (exitReport, bool) {
	var buf [32]byte
	n := 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
			if i != n-1 {
				return exitReport{}, false
			}
			return parseExitReport(string(buf[:i]))
		}
		if err != nil {
			return exitReport{}, false
		}
	}
	return exitReport{}, false
}

func parseExitReport(line string) (exitReport, bool) {
	fields := strings.Split(line, " ")
	if len(fields) > 3 {
		return exitReport{}, false
	}
	code, err := strconv.Atoi(fields[0])
	if err != nil || code < 0 || code > 255 {
		return exitReport{}, false
	}
	r := exitReport{code: code}
	for i, dst := range []*int64{&r.maxRSSKB, &r.cpuTimeMs} {
		if i+1 >= len(fields) {
			break
		}
		v, err := strconv.ParseInt(fields[i+1], 10, 64)
		if err != nil || v < 0 {
			return exitReport{}, false
		}
		*dst = v
	}
	return r, true
}

// clockTicksPerSecond is the unit of the times in /proc/PID/stat (USER_HZ,
// 100 on every Linux architecture).
const clockTicksPerSecond = 100

// processUsage reads a live process's peak resident size and CPU time (its
// own and that of the children it waited for), as wait4 would have
// reported them at its exit; zero where /proc cannot tell.
func processUsage(pid int) stageUsage {
	var u stageUsage
	dir := "/proc/" + strconv.Itoa(pid) + "/"
	if stat, err := os.ReadFile(dir + "stat"); err == nil {
		// The fields after the command, which is in parentheses and may
		// hold anything: state is the 3rd field, utime..cstime the 14th
		// to 17th.
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 {
			f := strings.Fields(string(stat[i+1:]))
			var ticks int64
			for _, k := range []int{11, 12, 13, 14} {
				if k < len(f) {
					v, _ := strconv.ParseInt(f[k], 10, 64)
					ticks += v
				}
			}
			u.cpuTimeMs = ticks * 1000 / clockTicksPerSecond
		}
	}
	if status, err := os.ReadFile(dir + "status"); err == nil {
		for line := range strings.SplitSeq(string(status), "\n") {
			if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
				u.maxRSSKB, _ = strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			}
		}
	}
	return u
}
