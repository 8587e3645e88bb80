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
	"encoding/json"
	"io"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
)

// changeEncodings are the encodings of one change's events, shared by the
// watchers it is pushed to: each event written once per encoder, not once
// per watcher.
type changeEncodings struct {
	new, old eventEncodings
}

// eventEncodings are one event object's encodings as whole watch events, by
// the identifier of the encoder of events, which tells the event's type.
type eventEncodings struct {
	lock      sync.Mutex
	encodings []*encodedEvent
}

type encodedEvent struct {
	id    runtime.Identifier
	lock  sync.Mutex
	done  bool
	bytes []byte
}

// write writes the encoding of id, which encode writes the first time; an
// encoding that fails is not kept.
func (s *eventEncodings) write(id runtime.Identifier, encode func(io.Writer) error, w io.Writer) error {
	b, err := s.of(id).encoded(encode)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

func (s *eventEncodings) of(id runtime.Identifier) *encodedEvent {
	s.lock.Lock()
	defer s.lock.Unlock()
	for _, e := range s.encodings {
		if e.id == id {
			return e
		}
	}
	e := &encodedEvent{id: id}
	s.encodings = append(s.encodings, e)
	return e
}

func (e *encodedEvent) encoded(encode func(io.Writer) error) ([]byte, error) {
	e.lock.Lock()
	defer e.lock.Unlock()
	if !e.done {
		var b bytes.Buffer
		if err := encode(&b); err != nil {
			return nil, err
		}
		e.bytes, e.done = b.Bytes(), true
	}
	return e.bytes, nil
}

// plainEventsPrefix begins the identifier of the server's encoder of whole
// watch events whose object encoder is jsonEncoder, none if empty: the
// encoders whose events the watchers share.
func plainEventsPrefix(jsonEncoder runtime.Identifier) string {
	if jsonEncoder == "" {
		return ""
	}
	quoted, err := json.Marshal(string(jsonEncoder))
	if err != nil {
		return ""
	}
	return watchFrameIdentifier + `"embeddedEncoder":` + string(quoted) + `,`
}
