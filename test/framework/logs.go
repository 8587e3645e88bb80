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
)

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
	processes := make([]*Process, 0, len(l.Servers)+len(l.Plugins))
	for _, s := range l.Servers {
		processes = append(processes, s.Process)
	}
	for _, p := range l.Plugins {
		processes = append(processes, p.Process)
	}
	var b strings.Builder
	for _, p := range processes {
		state := "running"
		if err := p.CheckRunning(); err != nil {
			state, _, _ = strings.Cut(err.Error(), "\n")
		}
		fmt.Fprintf(&b, "\n--- last %d lines of %s (%s, %s) ---\n%s\n", l.Lines, p.name, state, p.LogPath, p.LogTail(l.Lines))
	}
	return b.String()
}
