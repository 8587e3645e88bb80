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

package mountbench

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of the CPU times in /proc/<pid>/stat (USER_HZ, 100 on Linux).
const clockTick = 10 * time.Millisecond

// cpuTime is the CPU time (user and system) that process pid used so far, from /proc/<pid>/stat.
func cpuTime(pid int) (time.Duration, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)) //nolint:gosec // G703: a process id, not a path.
	if err != nil {
		return 0, err
	}
	return parseCPUTime(pid, stat)
}

// parseCPUTime is the CPU time in stat, the content of /proc/<pid>/stat.
func parseCPUTime(pid int, stat []byte) (time.Duration, error) {
	// The command, field 2, is in parentheses and may hold spaces: the fields after its closing one start at 3.
	end := strings.LastIndexByte(string(stat), ')')
	if end < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command", pid)
	}
	fields := strings.Fields(string(stat[end+1:]))
	const utime, stime = 14 - 3, 15 - 3
	if len(fields) <= stime {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(fields)+2)
	}
	var ticks int64
	for _, field := range []string{fields[utime], fields[stime]} {
		n, err := strconv.ParseInt(field, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * clockTick, nil
}

// cpuTimes are the CPU times of kcp and the plugin.
type cpuTimes struct {
	kcp, plugin time.Duration
}

// cpuTimes reads the CPU times of kcp and the plugin (if any) so far.
func (b *bench) cpuTimes() (cpuTimes, error) {
	kcp, err := cpuTime(b.kcp.Pid())
	if err != nil {
		return cpuTimes{}, err
	}
	if b.plugin == nil {
		return cpuTimes{kcp: kcp}, nil
	}
	plugin, err := cpuTime(b.plugin.Pid())
	if err != nil {
		return cpuTimes{}, err
	}
	return cpuTimes{kcp: kcp, plugin: plugin}, nil
}
