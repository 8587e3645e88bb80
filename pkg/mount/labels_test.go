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

package mount

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
)

func TestBoundedLabels(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("v", 63)
	many := map[string]string{}
	for i := range 100 {
		many[fmt.Sprintf("k%03d", i)] = "v"
	}
	wide := map[string]string{"a": strings.Repeat("x", MaxLabelBytes), "b": "y"}
	large := map[string]string{}
	for i := range 80 {
		large[fmt.Sprintf("%s/k%02d", strings.Repeat("p", 40), i)] = long // 107 bytes each
	}
	for _, tc := range []struct {
		name   string
		labels map[string]string
		kept   []string
		cut    int
	}{
		{name: "none", labels: nil, cut: 0},
		{name: "few", labels: map[string]string{"a": "1", "b": "2"}, kept: []string{"a", "b"}},
		{name: "the first 64 keys", labels: many, kept: []string{"k000", "k063"}, cut: 36},
		{name: "one that does not fit is skipped", labels: wide, kept: []string{"b"}, cut: 1},
		{name: "the first keys within 4 KiB", labels: large, kept: []string{strings.Repeat("p", 40) + "/k37"}, cut: 80 - MaxLabelBytes/107},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			kept, cut := BoundedLabels(tc.labels)
			require.Equal(t, tc.cut, cut)
			require.Len(t, kept, len(tc.labels)-cut)
			for _, k := range tc.kept {
				require.Equal(t, tc.labels[k], kept[k])
			}
			again, none := BoundedLabels(kept)
			require.Equal(t, kept, again, "idempotent")
			require.Zero(t, none)
		})
	}
}

func TestLegacyAnnotationTooLong(t *testing.T) {
	t.Parallel()
	value := `{"spec":{"ref":{"apiVersion":"contrib.kcp.io/v1alpha1","kind":"KubeCluster","name":"` + strings.Repeat("x", MaxLegacyAnnotationBytes) + `"}}}`
	ws := &tenancyv1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{LegacyAnnotationKey: value}}}
	_, err := Rule{LegacyAnnotation: true}.ReferenceOf(ws)
	require.ErrorContains(t, err, "longer than 8192 bytes")
}
