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
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"

	"github.com/kcp-dev/logicalcluster/v3"

	"github.com/workspacemounts/workspacemounts/pkg/tenant"
)

// testTenantOf makes the tenant of a key's cluster the cluster's name up
// to its first "-": cluster a-7 belongs to tenant a.
func testTenantOf(cluster logicalcluster.Name) tenant.Name {
	name, _, _ := strings.Cut(cluster.String(), "-")
	return tenant.Name(name)
}

func testKey(t string, i int) string { return fmt.Sprintf("%s-%d|ws-%d", t, i%7, i) }

func TestFairQueueServesAnotherTenantWithinOneTurn(t *testing.T) {
	t.Parallel()
	q := newTenantQueue("", keyTenant(testTenantOf))
	t.Cleanup(q.ShutDown)
	for i := range 1000 {
		q.Add(testKey("a", i))
	}
	q.Add(testKey("b", 0))
	first, _ := q.Get()
	second, _ := q.Get()
	if got := keyTenant(testTenantOf)(first); got != "a" {
		t.Fatalf("first key %q, want one of tenant a, which queued first", first)
	}
	if second != testKey("b", 0) {
		t.Fatalf("second key %q, want tenant b's key %q: b waited more than one turn behind a's 1000 keys", second, testKey("b", 0))
	}
	// a's keys come in the order they were added, then nothing else.
	q.Done(first)
	q.Done(second)
	for i := 1; i < 1000; i++ {
		key, _ := q.Get()
		if key != testKey("a", i) {
			t.Fatalf("key %d: %q, want %q", i, key, testKey("a", i))
		}
		q.Done(key)
	}
	if q.Len() != 0 {
		t.Fatalf("%d keys left", q.Len())
	}
}

func TestFairQueueKeepsWorkqueueSemantics(t *testing.T) {
	t.Parallel()
	q := newTenantQueue("", keyTenant(testTenantOf))
	t.Cleanup(q.ShutDown)
	key := testKey("a", 1)
	q.Add(key)
	q.Add(key) // queued already: once
	if q.Len() != 1 {
		t.Fatalf("Len %d after adding a key twice, want 1", q.Len())
	}
	got, _ := q.Get()
	q.Add(key) // while processing: queued again after Done, not handed out now
	if q.Len() != 0 {
		t.Fatalf("a key in progress was queued: Len %d", q.Len())
	}
	q.Done(got)
	if q.Len() != 1 {
		t.Fatalf("a key added while in progress is not queued after Done: Len %d", q.Len())
	}
	got, _ = q.Get()
	q.AddRateLimited(got)
	q.Done(got)
	if q.NumRequeues(got) != 1 {
		t.Fatalf("NumRequeues %d, want 1", q.NumRequeues(got))
	}
	q.Forget(got)
	if q.NumRequeues(got) != 0 {
		t.Fatalf("NumRequeues %d after Forget, want 0", q.NumRequeues(got))
	}
	q.AddAfter(testKey("b", 2), time.Millisecond)
	if got, _ := q.Get(); got != key && got != testKey("b", 2) {
		t.Fatalf("unexpected key %q", got)
	}
}

// TestFairQueueConcurrent adds, gets and finishes keys of several tenants
// from many goroutines (run it with -race): no key is handed to two
// workers at once, and every key added is processed after its last add.
func TestFairQueueConcurrent(t *testing.T) {
	t.Parallel()
	q := newTenantQueue("", keyTenant(testTenantOf))
	var (
		lock       sync.Mutex
		processing = map[string]bool{}
		added      = map[string]int{} // adds not yet followed by a processing start
	)
	var workers sync.WaitGroup
	for range 8 {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for {
				key, quit := q.Get()
				if quit {
					return
				}
				lock.Lock()
				if processing[key] {
					t.Errorf("key %q handed to two workers at once", key)
				}
				processing[key] = true
				delete(added, key)
				lock.Unlock()
				time.Sleep(time.Duration(rand.Intn(50)) * time.Microsecond)
				lock.Lock()
				delete(processing, key)
				lock.Unlock()
				q.Done(key)
			}
		}()
	}
	var adders sync.WaitGroup
	for a := range 6 {
		adders.Add(1)
		go func() {
			defer adders.Done()
			r := rand.New(rand.NewSource(int64(a)))
			for range 2000 {
				key := testKey("abcd"[r.Intn(4):][:1], r.Intn(50))
				lock.Lock()
				added[key]++
				lock.Unlock()
				q.Add(key)
			}
		}()
	}
	adders.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for {
		lock.Lock()
		left := len(added) + len(processing)
		lock.Unlock()
		if left == 0 && q.Len() == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d keys never processed after their last add", left)
		}
		time.Sleep(time.Millisecond)
	}
	q.ShutDown()
	workers.Wait()
}

// FuzzFairQueue drives client-go's workqueue over a fairQueue with a
// sequence of adds, gets and dones, against a model of the workqueue: no
// key is lost, duplicated or handed out while in progress, and no tenant
// is served twice while another waits with queued keys.
func FuzzFairQueue(f *testing.F) {
	f.Add([]byte{0x00, 0x11, 0x22, 0x40, 0x40, 0x80, 0x03, 0x40})
	f.Add([]byte{0x01, 0x02, 0x03, 0x04, 0x10, 0x40, 0x40, 0x40, 0x81, 0x82, 0x40})
	f.Fuzz(func(t *testing.T, ops []byte) {
		q := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[string]{Queue: newFairQueue(keyTenant(testTenantOf))})
		defer q.ShutDown()
		tenantOf := keyTenant(testTenantOf)
		queued := map[string]bool{}
		processing := []string{}
		inProgress := map[string]bool{}
		redo := map[string]bool{}
		// servedWhileWaiting[y][x]: keys of x handed out since y last
		// was served while y had keys queued.
		servedWhileWaiting := map[tenant.Name]map[tenant.Name]int{}
		waiting := func(t tenant.Name) bool {
			for key := range queued {
				if tenantOf(key) == t {
					return true
				}
			}
			return false
		}
		enqueue := func(key string) {
			if tn := tenantOf(key); !waiting(tn) {
				servedWhileWaiting[tn] = map[tenant.Name]int{}
			}
			queued[key] = true
		}
		get := func() {
			key, _ := q.Get()
			if !queued[key] || inProgress[key] {
				t.Fatalf("handed out %q, which is not queued or is in progress", key)
			}
			delete(queued, key)
			served := tenantOf(key)
			for y, counts := range servedWhileWaiting {
				if y == served || !waiting(y) {
					continue
				}
				counts[served]++
				if counts[served] > 1 {
					t.Fatalf("tenant %s served twice while tenant %s waited", served, y)
				}
			}
			servedWhileWaiting[served] = map[tenant.Name]int{}
			inProgress[key] = true
			processing = append(processing, key)
		}
		for _, op := range ops {
			switch op >> 6 {
			case 0, 1: // add a key: tenant op>>3&7, workspace op&7
				key := testKey(string(rune('a'+int(op>>3&7))), int(op&7))
				q.Add(key)
				switch {
				case inProgress[key]:
					redo[key] = true
				case !queued[key]:
					enqueue(key)
				}
			case 2: // done
				if len(processing) == 0 {
					continue
				}
				i := int(op&0x3f) % len(processing)
				key := processing[i]
				processing = append(processing[:i], processing[i+1:]...)
				delete(inProgress, key)
				q.Done(key)
				if redo[key] {
					delete(redo, key)
					enqueue(key)
				}
			case 3: // get
				if q.Len() > 0 {
					get()
				}
			}
			if q.Len() != len(queued) {
				t.Fatalf("Len %d, want %d queued", q.Len(), len(queued))
			}
		}
		for q.Len() > 0 {
			get()
		}
		if len(queued) != 0 {
			t.Fatalf("keys lost: %v", queued)
		}
	})
}
