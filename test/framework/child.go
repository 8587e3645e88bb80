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
	"os"
	"os/exec"
	"syscall"
	"time"
)

// child is a process the framework runs besides kcp (the plugin,
// Prometheus): in a process group of its own, so that a Ctrl-C reaches it
// only through stop, its output in a log file.
type child struct {
	name    string // in messages
	cmd     *exec.Cmd
	logFile *os.File

	exited  chan struct{} // closed when the process has exited
	waitErr error         // the result of cmd.Wait, set before exited is closed
}

// startChild runs binary with args in dir, its output going to a new file
// at logPath. The process is not tied to a context: it must outlive a
// cancelled one until stop has asked it politely to shut down.
func startChild(name, binary string, args []string, dir, logPath string) (*child, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("creating the log file of %s: %w", name, err)
	}
	cmd := exec.CommandContext(context.Background(), binary, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = ChildProcessAttributes()
	if err := cmd.Start(); err != nil {
		return nil, errors.Join(fmt.Errorf("starting %s: %w", binary, err), logFile.Close())
	}
	c := &child{name: name, cmd: cmd, logFile: logFile, exited: make(chan struct{})}
	go func() {
		c.waitErr = cmd.Wait()
		close(c.exited)
	}()
	return c, nil
}

// checkRunning returns nil while the process runs, else an error with its exit status.
func (c *child) checkRunning(logPath string) error {
	select {
	case <-c.exited:
		return fmt.Errorf("%s exited: %v (log: %s)", c.name, c.waitErr, logPath)
	default:
		return nil
	}
}

// signal sends sig to the process group; one that is gone already is no error.
func (c *child) signal(sig syscall.Signal) error {
	if err := syscall.Kill(-c.cmd.Process.Pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("sending %s to %s: %w", sig, c.name, err)
	}
	return nil
}

// stop sends SIGTERM, and SIGKILL if the process has not exited after
// timeout, then closes the log file.
func (c *child) stop(timeout time.Duration) error {
	err := c.terminate(timeout)
	return errors.Join(err, c.logFile.Close())
}

func (c *child) terminate(timeout time.Duration) error {
	if err := c.signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case <-c.exited:
		return nil
	case <-time.After(timeout):
	}
	if err := c.signal(syscall.SIGKILL); err != nil {
		return err
	}
	<-c.exited
	return fmt.Errorf("%s did not stop within %s after SIGTERM and was killed", c.name, timeout)
}
