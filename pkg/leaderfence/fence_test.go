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

package leaderfence

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// leaseLock is a Lease held in memory: Update fails with err, if set.
type leaseLock struct {
	identity string
	record   resourcelock.LeaderElectionRecord
	err      error
	// during runs while a write is on its way (the clock moving meanwhile).
	during func()
}

func (l *leaseLock) Get(context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	return &l.record, nil, nil
}

func (l *leaseLock) Create(ctx context.Context, record resourcelock.LeaderElectionRecord) error {
	return l.Update(ctx, record)
}

func (l *leaseLock) Update(_ context.Context, record resourcelock.LeaderElectionRecord) error {
	if l.during != nil {
		l.during()
	}
	if l.err != nil {
		return l.err
	}
	l.record = record
	return nil
}

func (l *leaseLock) RecordEvent(string) {}
func (l *leaseLock) Identity() string   { return l.identity }
func (l *leaseLock) Describe() string   { return "in memory" }

func TestFence(t *testing.T) {
	t.Parallel()
	const deadline = 10 * time.Second
	mine := resourcelock.LeaderElectionRecord{HolderIdentity: "me"}
	theirs := resourcelock.LeaderElectionRecord{HolderIdentity: "them"}
	released := resourcelock.LeaderElectionRecord{}
	type step struct {
		write   *resourcelock.LeaderElectionRecord // through the lock, or nil
		create  bool
		fail    bool          // the write fails
		takes   time.Duration // how long the write is on its way
		advance time.Duration // then the clock moves
		allowed bool          // and Allow says
	}
	for name, steps := range map[string][]step{
		"closed before any renewal": {{allowed: false}},
		"acquired by Create":        {{write: &mine, create: true, allowed: true}},
		"renewed, within the deadline": {
			{write: &mine, allowed: true},
			{advance: deadline - time.Millisecond, allowed: true},
		},
		"frozen past the deadline": {
			{write: &mine, allowed: true},
			{advance: deadline, allowed: false},
			{advance: time.Hour, allowed: false},
		},
		"renewed again opens it": {
			{write: &mine, advance: deadline, allowed: false},
			{write: &mine, allowed: true},
		},
		"a slow renewal counts from when it began": {
			{write: &mine, takes: deadline - time.Second, allowed: true},
			{advance: time.Second, allowed: false},
		},
		"a failed renewal changes nothing": {
			{write: &mine, allowed: true},
			{write: &mine, fail: true, advance: deadline - time.Second, allowed: true},
			{write: &mine, fail: true, advance: time.Second, allowed: false},
		},
		"released": {
			{write: &mine, allowed: true},
			{write: &released, allowed: false},
		},
		"another holder": {
			{write: &mine, allowed: true},
			{write: &theirs, allowed: false},
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			now := time.Unix(1000, 0)
			f := New(deadline)
			f.now = func() time.Time { return now }
			inner := &leaseLock{identity: "me"}
			lock := f.Lock(inner)
			for i, s := range steps {
				inner.err = nil
				if s.fail {
					inner.err = errors.New("kcp does not answer")
				}
				inner.during = func() { now = now.Add(s.takes) }
				if s.write != nil {
					var err error
					if s.create {
						err = lock.Create(t.Context(), *s.write)
					} else {
						err = lock.Update(t.Context(), *s.write)
					}
					if (err != nil) != s.fail {
						t.Fatalf("step %d: write: %v", i, err)
					}
				}
				now = now.Add(s.advance)
				err := f.Allow()
				if got := err == nil; got != s.allowed {
					t.Fatalf("step %d: allowed %t, want %t (%v)", i, got, s.allowed, err)
				}
				if err != nil && !errors.Is(err, ErrFenced) {
					t.Fatalf("step %d: %v is not ErrFenced", i, err)
				}
			}
		})
	}
}

func TestNilFenceAllows(t *testing.T) {
	t.Parallel()
	var f *Fence
	if err := f.Allow(); err != nil {
		t.Fatal(err)
	}
}
