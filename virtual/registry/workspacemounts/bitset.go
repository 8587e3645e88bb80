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

import "math/bits"

// bitset is a set of cluster slots (slots.go), a bit each, as long as its
// highest member needs.
type bitset []uint64

func (b bitset) get(i uint32) bool {
	word := int(i / 64)
	return word < len(b) && b[word]&(1<<(i%64)) != 0
}

func (b *bitset) set(i uint32, on bool) {
	word := int(i / 64)
	if word >= len(*b) {
		if !on {
			return
		}
		*b = append(*b, make([]uint64, word+1-len(*b))...)
	}
	if on {
		(*b)[word] |= 1 << (i % 64)
	} else {
		(*b)[word] &^= 1 << (i % 64)
	}
}

// trim drops the empty words at the end, and the memory when none is left.
func (b *bitset) trim() {
	n := len(*b)
	for n > 0 && (*b)[n-1] == 0 {
		n--
	}
	switch {
	case n == 0:
		*b = nil
	case n < len(*b):
		*b = (*b)[:n]
	}
}

// ones are the members, in order.
func (b bitset) ones() []uint32 {
	var ones []uint32
	for word, w := range b {
		for w != 0 {
			bit := bits.TrailingZeros64(w)
			ones = append(ones, uint32(word*64+bit)) //nolint:gosec // a slot is a uint32
			w &^= 1 << bit
		}
	}
	return ones
}
