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

// Package leaderfence keeps a leader from writing once its Lease may be another's
// (docs/design/pkg-leader.md).
package leaderfence

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

var ErrFenced = errors.New("not written: the leader Lease was not renewed within the renew deadline, another replica may lead")

// Fence allows writes within renewDeadline of the start of the last renewal [Fence.Lock] recorded,
// before another replica can lead.
type Fence struct {
	renewDeadline time.Duration
	now           func() time.Time

	lock    sync.Mutex
	renewed time.Time // zero while the Lease is not held
}

// New is a Fence closed until a renewal succeeds.
func New(renewDeadline time.Duration) *Fence {
	return &Fence{renewDeadline: renewDeadline, now: time.Now}
}

// Allow returns nil or an error wrapping [ErrFenced]; a nil Fence allows every write.
func (f *Fence) Allow() error {
	if f == nil {
		return nil
	}
	f.lock.Lock()
	renewed := f.renewed
	f.lock.Unlock()
	if renewed.IsZero() {
		return fmt.Errorf("%w (the Lease is not held)", ErrFenced)
	}
	if age := f.now().Sub(renewed); age >= f.renewDeadline {
		return fmt.Errorf("%w (last renewed %s ago, renew deadline %s)", ErrFenced, age.Round(time.Millisecond), f.renewDeadline)
	}
	return nil
}

func (f *Fence) held(began time.Time) {
	f.lock.Lock()
	defer f.lock.Unlock()
	if began.After(f.renewed) {
		f.renewed = began
	}
}

func (f *Fence) close() {
	f.lock.Lock()
	defer f.lock.Unlock()
	f.renewed = time.Time{}
}

// Lock wraps the Lease's lock so that each successful write opens or closes the fence.
func (f *Fence) Lock(inner resourcelock.Interface) resourcelock.Interface {
	if f == nil {
		return inner
	}
	return &fencedLock{Interface: inner, fence: f}
}

type fencedLock struct {
	resourcelock.Interface
	fence *Fence
}

func (l *fencedLock) Create(ctx context.Context, record resourcelock.LeaderElectionRecord) error {
	return l.write(record, func() error { return l.Interface.Create(ctx, record) })
}

func (l *fencedLock) Update(ctx context.Context, record resourcelock.LeaderElectionRecord) error {
	return l.write(record, func() error { return l.Interface.Update(ctx, record) })
}

func (l *fencedLock) write(record resourcelock.LeaderElectionRecord, write func() error) error {
	began := l.fence.now()
	err := write()
	switch {
	case err != nil: // kcp may have it or not: the last success still counts
	case record.HolderIdentity == l.Identity():
		l.fence.held(began)
	default:
		l.fence.close()
	}
	return err
}
