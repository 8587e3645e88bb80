//go:build e2e

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

package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/workspacemounts/workspacemounts/test/framework"
)

// opLogLines is how many lines of a plugin's log a failure message quotes.
const opLogLines = 40

// opBinary is the workspacemounts executable: $WORKSPACEMOUNTS_BINARY, else
// <repo root>/bin/workspacemounts (`make build`).
func opBinary(t *testing.T) string {
	t.Helper()
	binary := os.Getenv("WORKSPACEMOUNTS_BINARY")
	if binary == "" {
		root, err := framework.RepoRoot()
		require.NoError(t, err)
		binary = filepath.Join(root, "bin", "workspacemounts")
	}
	info, err := os.Stat(binary)
	require.NoError(t, err, "the workspacemounts binary (run `make build`, or set WORKSPACEMOUNTS_BINARY)")
	require.False(t, info.IsDir(), "%s is a directory", binary)
	return binary
}

// opPlugin is one `workspacemounts start` process, in a process group of its
// own, logging to a file.
type opPlugin struct {
	name       string
	cmd        *exec.Cmd
	logPath    string
	metricsURL string // http://127.0.0.1:<port>
	vwURL      string // https://127.0.0.1:<port>
	certDir    string
	started    time.Time

	exited  chan struct{} // closed once the process has exited
	waitErr error         // cmd.Wait's result, set before exited is closed
}

// opStartPlugin starts `workspacemounts start` with free ports and the given
// extra flags, its log and certificates in dir/name, and kills its process
// group when owner ends (a parent test, so that the process outlives the
// subtest t that starts it).
func opStartPlugin(t, owner *testing.T, dir, name, kubeconfig string, extra ...string) *opPlugin {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	vwPort, err := framework.FreePort(ctx)
	require.NoError(t, err)
	metricsPort, err := framework.FreePort(ctx)
	require.NoError(t, err)
	dir = filepath.Join(dir, name)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	p := &opPlugin{
		name:       name,
		logPath:    filepath.Join(dir, name+".log"),
		metricsURL: fmt.Sprintf("http://127.0.0.1:%d", metricsPort),
		vwURL:      fmt.Sprintf("https://127.0.0.1:%d", vwPort),
		certDir:    filepath.Join(dir, "certs"),
		exited:     make(chan struct{}),
	}
	args := append([]string{
		"start",
		"--kubeconfig", kubeconfig,
		"--context", "shard-base",
		"--bind-address", "127.0.0.1",
		"--secure-port", strconv.Itoa(vwPort),
		"--cert-dir", p.certDir,
		"--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", metricsPort),
	}, extra...)
	logFile, err := os.Create(p.logPath)
	require.NoError(t, err)

	p.cmd = exec.CommandContext(ctx, opBinary(t), args...)
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	p.cmd.Cancel = func() error { return p.signal(syscall.SIGKILL) }
	p.cmd.WaitDelay = 10 * time.Second
	p.started = time.Now()
	require.NoError(t, p.cmd.Start(), "starting %s", name)
	t.Logf("%s: pid %d, metrics %s, virtual workspace %s, log %s", name, p.cmd.Process.Pid, p.metricsURL, p.vwURL, p.logPath)
	go func() {
		p.waitErr = p.cmd.Wait()
		_ = logFile.Close()
		close(p.exited)
	}()
	owner.Cleanup(func() {
		cancel() // SIGKILL to the process group, if still running
		select {
		case <-p.exited:
		case <-time.After(15 * time.Second):
			owner.Errorf("%s (pid %d) did not exit after SIGKILL", name, p.cmd.Process.Pid)
		}
	})
	return p
}

// signal sends sig to the plugin's process group.
func (p *opPlugin) signal(sig syscall.Signal) error {
	if err := syscall.Kill(-p.cmd.Process.Pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}

// running reports whether the process has not exited yet.
func (p *opPlugin) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// exitCode is the process's exit code, or -1 when a signal ended it.
func (p *opPlugin) exitCode() int {
	return p.cmd.ProcessState.ExitCode()
}

// logTail returns the last n lines of the plugin's log.
func (p *opPlugin) logTail(n int) string {
	data, err := os.ReadFile(p.logPath)
	if err != nil {
		return fmt.Sprintf("(reading %s: %v)", p.logPath, err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// opLogs formats the log tails of plugins for a failure message.
func opLogs(plugins ...*opPlugin) string {
	var b strings.Builder
	for _, p := range plugins {
		state := "running"
		if !p.running() {
			state = fmt.Sprintf("exited: %v", p.waitErr)
		}
		fmt.Fprintf(&b, "\n--- last %d lines of %s (%s, %s) ---\n%s\n", opLogLines, p.name, state, p.logPath, p.logTail(opLogLines))
	}
	return b.String()
}

// opEventually checks condition every tick until it returns true, and fails
// the test within timeout otherwise, with the last reason and the log tails
// of plugins at that moment.
func opEventually(t *testing.T, timeout, tick time.Duration, what string, condition func() (bool, string), plugins ...*opPlugin) time.Duration {
	t.Helper()
	began := time.Now()
	deadline := began.Add(timeout)
	var reason string
	for {
		var done bool
		done, reason = condition()
		if done {
			return time.Since(began)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %s%s", what, timeout, reason, opLogs(plugins...))
		}
		time.Sleep(tick)
	}
}

// opHTTP is a plain HTTP client for the metrics and health endpoints.
var opHTTP = &http.Client{Timeout: 5 * time.Second}

// opGet GETs url and returns the status code and body; err is set when no
// HTTP response came back (e.g. connection refused).
func opGet(client *http.Client, url, token string) (int, string, error) {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, http.NoBody)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	return resp.StatusCode, string(body), err
}

// opSample is one sample of the Prometheus text format.
type opSample struct {
	name   string
	labels map[string]string
	value  float64
}

// opMetrics is one scrape.
type opMetrics []opSample

// scrape GETs the plugin's /metrics and parses it.
func (p *opPlugin) scrape() (opMetrics, error) {
	code, body, err := opGet(opHTTP, p.metricsURL+"/metrics", "")
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("GET %s/metrics: %d: %s", p.metricsURL, code, body)
	}
	return opParseMetrics(body)
}

// opParseMetrics parses the Prometheus text exposition format (the subset
// component-base writes: no timestamps needed, escaped label values).
func opParseMetrics(text string) (opMetrics, error) {
	var samples opMetrics
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		s, err := opParseSample(line)
		if err != nil {
			return nil, fmt.Errorf("line %d %q: %w", i+1, line, err)
		}
		samples = append(samples, s)
	}
	return samples, nil
}

func opParseSample(line string) (opSample, error) {
	s := opSample{labels: map[string]string{}}
	end := strings.IndexAny(line, "{ ")
	if end <= 0 {
		return s, errors.New("no metric name")
	}
	s.name, line = line[:end], line[end:]
	if strings.HasPrefix(line, "{") {
		line = line[1:]
		for {
			line = strings.TrimLeft(line, " ,")
			if strings.HasPrefix(line, "}") {
				line = line[1:]
				break
			}
			eq := strings.Index(line, `="`)
			if eq <= 0 {
				return s, errors.New("malformed labels")
			}
			key := line[:eq]
			line = line[eq+2:]
			var value bytes.Buffer
			closed := false
			for i := 0; i < len(line); i++ {
				c := line[i]
				if c == '\\' && i+1 < len(line) {
					i++
					switch line[i] {
					case 'n':
						value.WriteByte('\n')
					default:
						value.WriteByte(line[i])
					}
					continue
				}
				if c == '"' {
					line, closed = line[i+1:], true
					break
				}
				value.WriteByte(c)
			}
			if !closed {
				return s, errors.New("unterminated label value")
			}
			s.labels[key] = value.String()
		}
	}
	fields := strings.Fields(line)
	if len(fields) == 0 {
		return s, errors.New("no value")
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return s, err
	}
	s.value = v
	return s, nil
}

// get sums the samples of name whose labels include want, and tells whether
// there was any.
func (m opMetrics) get(name string, want map[string]string) (float64, bool) {
	var sum float64
	var found bool
	for _, s := range m {
		if s.name != name {
			continue
		}
		match := true
		for k, v := range want {
			if s.labels[k] != v {
				match = false
				break
			}
		}
		if match {
			sum += s.value
			found = true
		}
	}
	return sum, found
}

// value is get with 0 for a missing series.
func (m opMetrics) value(name string, want map[string]string) float64 {
	v, _ := m.get(name, want)
	return v
}

// opLabels is a shorthand for label maps: opLabels("k1", "v1", "k2", "v2").
func opLabels(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}
