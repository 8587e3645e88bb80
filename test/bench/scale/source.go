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

package main

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	kjson "sigs.k8s.io/json"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// fakeSource is a ListerWatcher serving a collection as kcp serves it: a
// list of options.Limit items from options.Continue (all of them without a
// limit), with a continue token and the list's resourceVersion, then a
// watch the simulation feeds. The items' JSON is encoded once, into a file,
// and each page is read from it and decoded at its request, as client-go
// reads and decodes kcp's answer (sigs.k8s.io/json): the process holds a
// page's bytes only while it decodes them.
type fakeSource struct {
	collection

	lock sync.Mutex
	file *os.File
	// offsets[i] is where item i's JSON begins in file, a comma after each;
	// offsets[n] is the file's end.
	offsets []int64
	watcher *watch.FakeWatcher
}

// collection is what a fakeSource serves: n items, item(i) each, in a
// list of that apiVersion, kind and resourceVersion.
type collection struct {
	apiVersion, kind, resourceVersion string
	n                                 int
	item                              func(i int) any
	newList                           func() runtime.Object
}

// newFakeSource writes the JSON of c's items in a file of dir.
func newFakeSource(dir string, c collection) (*fakeSource, error) {
	f, err := os.CreateTemp(dir, c.kind+"-*.json")
	if err != nil {
		return nil, err
	}
	s := &fakeSource{collection: c, file: f, offsets: make([]int64, 0, c.n+1), watcher: watch.NewFakeWithChanSize(1000, false)}
	w := bufio.NewWriterSize(f, 1<<20)
	var at int64
	for i := range c.n {
		data, err := json.Marshal(c.item(i))
		if err != nil {
			return nil, errors.Join(err, s.close())
		}
		s.offsets = append(s.offsets, at)
		_, _ = w.Write(data)
		if err := w.WriteByte(','); err != nil {
			return nil, errors.Join(err, s.close())
		}
		at += int64(len(data)) + 1
	}
	s.offsets = append(s.offsets, at)
	if err := w.Flush(); err != nil {
		return nil, errors.Join(err, s.close())
	}
	return s, nil
}

// listHead is a list's JSON before its items.
type listHead struct {
	Kind       string          `json:"kind"`
	APIVersion string          `json:"apiVersion"`
	Metadata   metav1.ListMeta `json:"metadata"`
}

func (s *fakeSource) List(options metav1.ListOptions) (runtime.Object, error) {
	s.lock.Lock()
	defer s.lock.Unlock()
	if s.file == nil {
		return nil, fmt.Errorf("%s listed after the initial list: the simulation lists once", s.kind)
	}
	n := len(s.offsets) - 1
	start := 0
	if options.Continue != "" {
		var err error
		if start, err = s.decodeContinue(options.Continue, n); err != nil {
			return nil, err
		}
	}
	end := n
	if options.Limit > 0 && int64(end-start) > options.Limit {
		end = start + int(options.Limit)
	}
	head := listHead{Kind: s.kind, APIVersion: s.apiVersion, Metadata: metav1.ListMeta{ResourceVersion: s.resourceVersion}}
	if end < n {
		remaining := int64(n - end)
		head.Metadata.Continue = s.encodeContinue(end)
		head.Metadata.RemainingItemCount = &remaining
	}
	prefix, err := json.Marshal(head)
	if err != nil {
		return nil, err
	}
	prefix = append(prefix[:len(prefix)-1], `,"items":[`...)
	items := int64(0)
	if end > start {
		items = s.offsets[end] - s.offsets[start] - 1 // without the last comma
	}
	data := make([]byte, int64(len(prefix))+items+2)
	copy(data, prefix)
	if _, err := s.file.ReadAt(data[len(prefix):int64(len(prefix))+items], s.offsets[start]); err != nil {
		return nil, err
	}
	copy(data[int64(len(prefix))+items:], "]}")
	obj := s.newList()
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// A continue token is the list's resourceVersion and the index of the next
// item, base64-encoded; one of another resourceVersion has expired.
func (s *fakeSource) encodeContinue(next int) string {
	return base64.RawURLEncoding.EncodeToString([]byte(s.resourceVersion + "/" + strconv.Itoa(next)))
}

func (s *fakeSource) decodeContinue(token string, n int) (int, error) {
	decoded, err := base64.RawURLEncoding.DecodeString(token)
	rv, next, found := strings.Cut(string(decoded), "/")
	i, atoiErr := strconv.Atoi(next)
	if err != nil || !found || atoiErr != nil || i < 0 || i > n {
		return 0, apierrors.NewBadRequest("invalid continue token")
	}
	if rv != s.resourceVersion {
		return 0, apierrors.NewResourceExpired("the continue token's resourceVersion is not the list's")
	}
	return i, nil
}

func (s *fakeSource) Watch(metav1.ListOptions) (watch.Interface, error) { return s.watcher, nil }

// IsWatchListSemanticsUnSupported makes the reflector list, then watch:
// kcp v0.28 does not stream lists.
func (*fakeSource) IsWatchListSemanticsUnSupported() bool { return true }

// forget drops the list's file once listed: the process does not keep it.
func (s *fakeSource) forget() error {
	s.lock.Lock()
	defer s.lock.Unlock()
	return s.close()
}

func (s *fakeSource) close() error {
	if s.file == nil {
		return nil
	}
	err := errors.Join(s.file.Close(), os.Remove(s.file.Name()))
	s.file, s.offsets = nil, nil
	return err
}
