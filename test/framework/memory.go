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
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Memory is a sample of a process's memory use, in bytes.
type Memory struct {
	// RSS is the resident set size (VmRSS) when sampled.
	RSS uint64
	// Peak is the peak resident set size (VmHWM) of the process so far.
	Peak uint64
}

// MemorySampler reads a process's memory from /proc/<pid>/status and keeps
// the last successful sample, which outlives the process.
type MemorySampler struct {
	pid int

	lock sync.Mutex
	last Memory
}

// run samples every interval until done is closed.
func (s *MemorySampler) run(interval time.Duration, done <-chan struct{}) {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		_, _ = s.Sample() // the last good sample stays
		select {
		case <-done:
			return
		case <-ticker.C:
		}
	}
}

// Sample reads the memory now and returns it, or the last sample and the
// error if it cannot be read any more (e.g. because the process exited).
func (s *MemorySampler) Sample() (Memory, error) {
	m, err := ReadMemory(s.pid)
	s.lock.Lock()
	defer s.lock.Unlock()
	if err != nil {
		return s.last, err
	}
	m.Peak = max(m.Peak, s.last.Peak, m.RSS)
	s.last = m
	return m, nil
}

// ReadMemory reads VmRSS and VmHWM of a process from /proc (Linux only).
func ReadMemory(pid int) (Memory, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Memory{}, err
	}
	defer f.Close()
	var m Memory
	var found int
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		key, value, ok := strings.Cut(scanner.Text(), ":")
		if !ok || key != "VmRSS" && key != "VmHWM" {
			continue
		}
		bytes, err := parseKiB(value)
		if err != nil {
			return Memory{}, fmt.Errorf("/proc/%d/status: %s: %w", pid, key, err)
		}
		if key == "VmRSS" {
			m.RSS = bytes
		} else {
			m.Peak = bytes
		}
		found++
	}
	if err := scanner.Err(); err != nil {
		return Memory{}, err
	}
	if found != 2 {
		return Memory{}, fmt.Errorf("/proc/%d/status has no VmRSS or VmHWM", pid)
	}
	return m, nil
}

// parseKiB parses a /proc/<pid>/status size like "   12345 kB" into bytes.
func parseKiB(value string) (uint64, error) {
	number, ok := strings.CutSuffix(strings.TrimSpace(value), " kB")
	if !ok {
		return 0, fmt.Errorf("%q is not in kB", value)
	}
	kib, err := strconv.ParseUint(strings.TrimSpace(number), 10, 64)
	return kib << 10, err
}

// MiB formats bytes in MiB, without decimals.
func MiB(bytes uint64) string {
	return fmt.Sprintf("%.0f MiB", float64(bytes)/(1<<20))
}
