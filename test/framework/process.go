/*
Copyright 2026 The workspacemounts Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package framework

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

const (
	// logTailBytes is how much of the end of a log is read for the last
	// lines of it that a failure shows.
	logTailBytes = 64 << 10
	// failureLogLines is how many lines of a process's log an error about
	// it shows.
	failureLogLines = 40
	// killTimeout bounds how long a process may take to exit after SIGKILL.
	killTimeout = 10 * time.Second
	// readyInterval is how often a process that was just started is asked
	// whether it is ready.
	readyInterval = 100 * time.Millisecond
)

// errPortInUse marks a start that failed because a port was taken meanwhile.
var errPortInUse = errors.New("a port was already in use")

// ErrKilled marks a Stop that had to send SIGKILL: the process did not
// stop within its stop timeout after SIGTERM, and was killed.
var ErrKilled = errors.New("killed")

// Process is a program the framework runs: kcp, each process of a sharded
// kcp (Server), the plugin (Plugin) and Prometheus. It runs in a process
// group of its own (processAttributes), so that a Ctrl-C reaches it only
// through Stop and a signal reaches whatever it starts itself, and it is not
// tied to a context: it must outlive a cancelled one until Stop has asked it
// politely to shut down. Its stdout and stderr go to LogPath, which its first
// start creates; a Server's later starts (StartAgain) append to it, each
// after a line "=== test framework: <name> started again (start <n>) at
// <time> ===".
type Process struct {
	// LogPath is the file the process logs to.
	LogPath string

	name        string // names it in messages: "kcp", "shard-2", "the plugin", "prometheus"
	url         string // where it serves, if it says so in messages: "kcp at https://127.0.0.1:41234"
	binary      string
	args        []string // the same for every start
	dir         string   // its working directory
	stopTimeout time.Duration

	lock    sync.Mutex
	latest  *instance // the latest start, nil before the first
	starts  int       // starts so far, failed ones included
	stopped string    // why no process runs on purpose (StopProcess, Kill, Stop), "" otherwise
	closed  bool      // Stop was called

	stopOnce sync.Once
	stopErr  error
}

// instance is one start of a Process.
type instance struct {
	cmd      *exec.Cmd
	logStart int64         // where its output begins in the log
	exited   chan struct{} // closed once it has exited
	err      error         // what cmd.Wait returned, set before exited is closed
}

// newProcess prepares a process that runs binary with args in dir, logging
// to logPath, and that Stop gives stopTimeout after SIGTERM.
func newProcess(name, url, binary string, args []string, dir, logPath string, stopTimeout time.Duration) *Process {
	return &Process{LogPath: logPath, name: name, url: url, binary: binary, args: args, dir: dir, stopTimeout: stopTimeout}
}

// start runs the process (again) and returns the new instance.
func (p *Process) start() (*instance, error) {
	p.lock.Lock()
	p.starts++
	starts := p.starts
	p.lock.Unlock()

	// The first start begins the log, later ones add to it.
	flags := os.O_CREATE | os.O_WRONLY | os.O_APPEND
	if starts == 1 {
		flags |= os.O_TRUNC
	}
	log, err := os.OpenFile(p.LogPath, flags, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening the log file of %s: %w", p.name, err)
	}
	defer log.Close() // the process has its own copy
	if starts > 1 {
		_, _ = fmt.Fprintf(log, "=== test framework: %s started again (start %d) at %s ===\n", p.name, starts, time.Now().Format(time.RFC3339))
	}
	logStart, err := log.Seek(0, io.SeekEnd)
	if err != nil {
		return nil, fmt.Errorf("opening the log file of %s: %w", p.name, err)
	}

	// Not a context of the caller's: exec.CommandContext would SIGKILL the
	// process when it is done, but Stop gives it the chance to shut down cleanly.
	cmd := exec.CommandContext(context.Background(), p.binary, p.args...) //nolint:gosec // G204: the binary and its flags are the caller's.
	cmd.Dir = p.dir
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = processAttributes()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", p.binary, err)
	}
	i := &instance{cmd: cmd, logStart: logStart, exited: make(chan struct{})}
	go func() {
		i.err = cmd.Wait()
		close(i.exited)
	}()
	p.lock.Lock()
	p.latest, p.stopped = i, ""
	p.lock.Unlock()
	return i, nil
}

// readinessProbe tells, asked again and again after a process started,
// whether it serves yet, and if not, why not.
type readinessProbe func(ctx context.Context) (ready bool, state string)

// waitReady asks ready every 100ms until instance i is ready, has exited,
// or timeout or ctx is over. If it exited, the error has the last lines of
// its output, and wraps errPortInUse if a port was taken.
func (p *Process) waitReady(ctx context.Context, i *instance, timeout time.Duration, ready readinessProbe) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ticker := time.NewTicker(readyInterval)
	defer ticker.Stop()

	state := "not asked yet"
	for {
		select {
		case <-i.exited:
			output := p.readLog(i.logStart)
			err := fmt.Errorf("%s exited before it became ready (%s): %v\n%s", p.name, state, i.err, lastLines(output, failureLogLines))
			if strings.Contains(output, "address already in use") {
				err = fmt.Errorf("%w: %w", errPortInUse, err)
			}
			return err
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s to become ready (%s): %w\n%s", p.who(), state, context.Cause(ctx), lastLines(p.readLog(i.logStart), failureLogLines))
		case <-ticker.C:
		}
		ok, why := ready(ctx)
		if ok {
			return nil
		}
		state = why
	}
}

// who names the process in messages, with where it serves.
func (p *Process) who() string {
	if p.url == "" {
		return p.name
	}
	return p.name + " at " + p.url
}

// current returns the latest start, or an error once Stop was called.
func (p *Process) current() (*instance, error) {
	p.lock.Lock()
	defer p.lock.Unlock()
	if p.closed {
		return nil, fmt.Errorf("%s was stopped for good (Stop)", p.who())
	}
	return p.latest, nil
}

// last returns the latest start, and why no process runs on purpose.
func (p *Process) last() (*instance, string) {
	p.lock.Lock()
	defer p.lock.Unlock()
	return p.latest, p.stopped
}

// started tells whether the process was started.
func (p *Process) started() bool {
	i, _ := p.last()
	return i != nil
}

// Pid is the process id of the latest start (also the id of its process
// group).
func (p *Process) Pid() int {
	i, _ := p.last()
	return i.cmd.Process.Pid
}

// Exited is closed once the latest start has exited.
func (p *Process) Exited() <-chan struct{} {
	i, _ := p.last()
	return i.exited
}

// ExitErr is what waiting for the latest start returned once it has exited
// (nil for exit code 0), and nil while it runs.
func (p *Process) ExitErr() error {
	i, _ := p.last()
	select {
	case <-i.exited:
		return i.err
	default:
		return nil
	}
}

// ExitCode is the exit code of the latest start once it has exited, -1
// while it runs or when a signal ended it.
func (p *Process) ExitCode() int {
	i, _ := p.last()
	select {
	case <-i.exited:
		return i.cmd.ProcessState.ExitCode()
	default:
		return -1
	}
}

// CheckRunning returns nil while the process runs (paused or not), else an
// error with its exit status and the last lines of its log; after
// StopProcess, Kill or Stop, an error saying so.
func (p *Process) CheckRunning() error {
	i, stopped := p.last()
	select {
	case <-i.exited:
		if stopped != "" {
			return fmt.Errorf("%s is not running: %s", p.who(), stopped)
		}
		return fmt.Errorf("%s exited: %v\n%s", p.who(), i.err, p.LogTail(failureLogLines))
	default:
		return nil
	}
}

// Signal sends sig to the process group, e.g. SIGKILL to test a crash or
// SIGTERM to test a graceful stop without waiting for it as Stop does. A
// process group that is gone already is no error.
func (p *Process) Signal(sig syscall.Signal) error {
	i, _ := p.last()
	return p.signal(i, sig)
}

func (p *Process) signal(i *instance, sig syscall.Signal) error {
	if err := syscall.Kill(-i.cmd.Process.Pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("sending %s to %s: %w", sig, p.name, err)
	}
	return nil
}

// Pause stops the process group with SIGSTOP: its listeners still accept
// connections (the kernel does), but nothing answers until Resume.
func (p *Process) Pause() error {
	return p.signalRunning(syscall.SIGSTOP)
}

// Resume continues the process group after Pause with SIGCONT.
func (p *Process) Resume() error {
	return p.signalRunning(syscall.SIGCONT)
}

// signalRunning sends sig to the process group, unless the process has
// exited or was stopped for good.
func (p *Process) signalRunning(sig syscall.Signal) error {
	i, err := p.current()
	if err != nil {
		return err
	}
	select {
	case <-i.exited:
		return fmt.Errorf("%s (pid %d) has exited: %v", p.name, i.cmd.Process.Pid, i.err)
	default:
	}
	return p.signal(i, sig)
}

// StopProcess stops the process as Stop does (SIGTERM to its process
// group, SIGKILL after a timeout), but it may be started again (a Server's
// StartAgain). It returns an error if the process had to be killed or had
// exited by itself before.
func (p *Process) StopProcess() error {
	i, err := p.toStop()
	if err != nil {
		return err
	}
	err = p.terminate(i)
	p.setStopped("stopped by StopProcess")
	return err
}

// Kill kills the process group with SIGKILL, as a crash would, and waits
// until the process has exited; it may be started again.
func (p *Process) Kill() error {
	i, err := p.toStop()
	if err != nil {
		return err
	}
	if err := p.signal(i, syscall.SIGKILL); err != nil {
		return err
	}
	select {
	case <-i.exited:
	case <-time.After(killTimeout):
		return fmt.Errorf("%s (pid %d) did not exit within %s of SIGKILL", p.name, i.cmd.Process.Pid, killTimeout)
	}
	p.setStopped("killed by Kill")
	return nil
}

// Stop sends SIGTERM to the process group (and SIGCONT, in case it is
// paused), waits for it to exit (kcp 20s, the plugin and Prometheus 15s),
// then sends SIGKILL. It is safe to call more than once, and after
// StopProcess or Kill; the process cannot be started again afterwards.
func (p *Process) Stop() error {
	p.stopOnce.Do(func() {
		p.lock.Lock()
		p.closed = true
		i := p.latest
		p.lock.Unlock()
		if i != nil {
			p.stopErr = p.terminate(i)
		}
		p.setStopped("stopped by Stop")
	})
	return p.stopErr
}

// terminate stops the process group of instance i, politely first.
// SIGCONT follows SIGTERM, so that a paused process gets it too.
func (p *Process) terminate(i *instance) error {
	select {
	case <-i.exited:
		return nil
	default:
	}
	if err := p.signal(i, syscall.SIGTERM); err != nil {
		return err
	}
	_ = p.signal(i, syscall.SIGCONT)
	select {
	case <-i.exited:
		return nil
	case <-time.After(p.stopTimeout):
	}
	if err := p.signal(i, syscall.SIGKILL); err != nil {
		return err
	}
	select {
	case <-i.exited:
		return fmt.Errorf("%s did not stop within %s after SIGTERM and was %w", p.name, p.stopTimeout, ErrKilled)
	case <-time.After(killTimeout):
		return fmt.Errorf("%s (pid %d) did not exit even after SIGKILL", p.name, i.cmd.Process.Pid)
	}
}

// toStop returns the latest start for StopProcess or Kill, or an error
// once Stop was called or if it has exited while it was not stopped on
// purpose.
func (p *Process) toStop() (*instance, error) {
	i, err := p.current()
	if err != nil {
		return nil, err
	}
	select {
	case <-i.exited:
	default:
		return i, nil
	}
	if _, stopped := p.last(); stopped != "" {
		return i, nil
	}
	return nil, fmt.Errorf("%s had exited by itself: %v\n%s", p.who(), i.err, p.LogTail(failureLogLines))
}

func (p *Process) setStopped(why string) {
	p.lock.Lock()
	defer p.lock.Unlock()
	if p.stopped == "" {
		p.stopped = why
	}
}

// LogTail returns the last n lines of the log (of at most its last 64
// KiB), across restarts.
func (p *Process) LogTail(n int) string {
	return lastLines(p.readLog(0), n)
}

// PrintLogTail writes the last n lines of the log to w.
func (p *Process) PrintLogTail(w io.Writer, n int) {
	fmt.Fprintf(w, "last lines of %s's log (%s):\n%s\n", p.name, p.LogPath, p.LogTail(n))
}

// readLog returns the log from offset on, at most its last logTailBytes.
func (p *Process) readLog(offset int64) string {
	f, err := os.Open(p.LogPath)
	if err != nil {
		return fmt.Sprintf("(reading the log: %v)", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return fmt.Sprintf("(reading the log: %v)", err)
	}
	offset = min(max(offset, info.Size()-logTailBytes), info.Size())
	data, err := io.ReadAll(io.NewSectionReader(f, offset, info.Size()-offset))
	if err != nil {
		return fmt.Sprintf("(reading the log: %v)", err)
	}
	return string(data)
}

// lastLines returns the last n complete or partial lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
