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
	"fmt"
	"strings"
	"sync"
)

// logTailBytes is how much of a process's output (kcp's, the plugin's) is
// kept or read for the last lines of its log that a failure shows.
const logTailBytes = 64 << 10

// tailBuffer is an io.Writer that keeps the last max bytes written to it.
type tailBuffer struct {
	mu   sync.Mutex
	max  int
	data []byte
}

func newTailBuffer(max int) *tailBuffer {
	return &tailBuffer{max: max}
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.data = append(b.data, p...)
	// Trim only when twice the size, so that copying stays cheap.
	if len(b.data) > 2*b.max {
		b.data = append(b.data[:0], b.data[len(b.data)-b.max:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.data) > b.max {
		return string(b.data[len(b.data)-b.max:])
	}
	return string(b.data)
}

// lastLines returns the last n complete or partial lines.
func (b *tailBuffer) lastLines(n int) string {
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// LogTails formats, for a failure message, whether each kcp process
// (Server) and plugin still runs and the last lines of its log. It reads
// the logs only when it is formatted, so that a message built before a wait
// shows them as they are when the wait fails.
type LogTails struct {
	// Lines is how many lines of each log to show.
	Lines   int
	Servers []*Server
	Plugins []*Plugin
}

func (l LogTails) String() string {
	var b strings.Builder
	for _, s := range l.Servers {
		state := "running"
		if err := s.CheckRunning(); err != nil {
			state, _, _ = strings.Cut(err.Error(), "\n")
		}
		fmt.Fprintf(&b, "\n--- last %d lines of %s (%s, %s) ---\n%s\n", l.Lines, s.name, state, s.LogPath, s.LogTail(l.Lines))
	}
	for _, p := range l.Plugins {
		state := "running"
		if err := p.CheckRunning(); err != nil {
			state = fmt.Sprintf("exited: %v", p.ExitErr())
		}
		fmt.Fprintf(&b, "\n--- last %d lines of %s (%s, %s) ---\n%s\n", l.Lines, p.Name, state, p.LogPath, p.LogTail(l.Lines))
	}
	return b.String()
}
