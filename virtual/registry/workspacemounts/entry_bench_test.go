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

package workspacemounts

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"testing"

	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
)

// historyAnnotation is the status annotation of a mount Ready since
// 2026-01-01 with n transitions before (n = 0: one state since first seen),
// written as raw JSON so that the benchmark reads the same Workspaces
// whatever the plugin makes of a status' history.
func historyAnnotation(name string, n int) string {
	transitions := make([]string, 0, n)
	for i := range n {
		transitions = append(transitions, fmt.Sprintf(`["Connecting",false,"MountNotReady","2025-12-31T%02d:00:00Z"]`, 10+i))
	}
	history := ""
	if n > 0 {
		history = `,"history":[` + strings.Join(transitions, ",") + `],"since":"2025-12-31T09:00:00Z","readySeconds":1800`
	}
	return `{"phase":"Ready","ready":true,"url":"https://` + name + `.example.io","reason":"MountReady","message":"KubeCluster ` + name +
		` (contrib.kcp.io/v1alpha1) is Ready.","mountRef":{"apiVersion":"contrib.kcp.io/v1alpha1","kind":"KubeCluster","name":"` + name +
		`"},"lastTransitionTime":"2026-01-01T00:00:00Z"` + history + `}`
}

// BenchmarkEntrySize measures what the store keeps per mounted Workspace,
// for a mount in one state since first seen and for one with the most
// transitions a status keeps (4 before the current one): the heap the
// entries of 10,000 Workspaces hold (entry-B/ws, after a GC: the Workspaces
// themselves, with their annotations, excluded), the status annotation
// (annotation-B) and the object as a list at * writes it (answer-B/ws).
func BenchmarkEntrySize(b *testing.B) {
	const n = 10000
	for _, transitions := range []int{0, 4} { // 4: mount.MaxTransitions-1
		b.Run(fmt.Sprintf("transitions-before-current=%d", transitions), func(b *testing.B) {
			for b.Loop() {
				s := NewStore(mount.Rule{})
				src := &source{synced: true}
				s.sources[""] = src
				workspaces := make([]interface{}, n)
				for i := range n {
					name := fmt.Sprintf("mount-%05d", i)
					ws := mounted(fmt.Sprintf("cluster-%03d", i%100), name, mount.PhaseReady, nil)
					ws.ResourceVersion = fmt.Sprint(i + 1)
					ws.Annotations[mount.StatusAnnotationKey] = historyAnnotation(name, transitions)
					workspaces[i] = ws
				}
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				for _, ws := range workspaces {
					s.upsert(src, ws)
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "entry-B/ws")
				b.ReportMetric(float64(len(historyAnnotation("mount-00000", transitions))), "annotation-B")

				answer, err := NewREST(s, allVisible).WithEncodedJSON("json").List(requestContext("*"), &metainternalversion.ListOptions{})
				if err != nil {
					b.Fatal(err)
				}
				var written bytes.Buffer
				if err := answer.(*listAnswer).CacheEncode("json", nil, &written); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(written.Len())/n, "answer-B/ws")
				runtime.KeepAlive(workspaces)
				runtime.KeepAlive(s)
			}
		})
	}
}
