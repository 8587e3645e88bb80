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

package share

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

func TestTableShares(t *testing.T) {
	t.Parallel()
	s := New()
	a := s.Map(map[string]string{"team": "a", "kcp.io/cluster": "c1"})
	b := s.Map(map[string]string{"kcp.io/cluster": "c1", "team": "a"})
	require.Equal(t, reflect.ValueOf(a).Pointer(), reflect.ValueOf(b).Pointer(), "one map")
	c := s.Map(map[string]string{"team": "b"})
	require.NotEqual(t, reflect.ValueOf(a).Pointer(), reflect.ValueOf(c).Pointer())
	require.Equal(t, map[string]string{"team": "b"}, c)

	x, y := s.String(strings.Clone("Ready")), s.String(strings.Clone("Ready"))
	require.Equal(t, unsafe.StringData(x), unsafe.StringData(y))
	long := strings.Repeat("x", MaxStringLen+1)
	l1, l2 := strings.Clone(long), strings.Clone(long)
	require.Equal(t, unsafe.StringData(l2), unsafe.StringData(s.String(l2)), "long strings are not kept: not l1")
	require.Equal(t, unsafe.StringData(l1), unsafe.StringData(s.String(l1)))

	many := map[string]string{}
	for i := range MaxMapLen + 1 {
		many[fmt.Sprint("l", i)] = "v"
	}
	require.Equal(t, reflect.ValueOf(many).Pointer(), reflect.ValueOf(s.Map(many)).Pointer(), "large maps are not looked up: their own")
	_, maps := s.Len()
	require.Equal(t, 2, maps)
}

// TestTableIsBounded: what tenants write cannot make a table grow past its bound.
func TestTableIsBounded(t *testing.T) {
	t.Parallel()
	s := New()
	for i := range 3 * MaxEntries {
		m := s.Map(map[string]string{"team": fmt.Sprint("t", i)})
		require.Equal(t, fmt.Sprint("t", i), m["team"])
		require.Equal(t, fmt.Sprint("k", i), s.String(fmt.Sprint("k", i)))
		strs, maps := s.Len()
		require.LessOrEqual(t, strs, MaxEntries)
		require.LessOrEqual(t, maps, MaxEntries)
	}
}
