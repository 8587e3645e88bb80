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

package server

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
)

// TestMountURLForm: the form --mount-url-contract chooses, from a shard
// answering GET /version as kcp does; with https or legacy kcp is not
// asked.
func TestMountURLForm(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		contract   string
		status     int
		gitVersion string
		want       mount.URLForm
		wantAsked  int32
	}{
		{"auto, kcp v0.28.1", MountURLContractAuto, http.StatusOK, "v1.31.6+kcp-v0.28.1", mount.URLFormLegacy, 1},
		{"auto, kcp v0.32.3", MountURLContractAuto, http.StatusOK, "v1.36.0+kcp-v0.32.3", mount.URLFormLegacy, 1},
		{"auto, kcp v0.33.0", MountURLContractAuto, http.StatusOK, "v1.36.0+kcp-v0.33.0", mount.URLFormHTTPS, 1},
		{"auto, kcp v0.34.0", MountURLContractAuto, http.StatusOK, "v1.37.0+kcp-v0.34.0", mount.URLFormHTTPS, 1},
		{"auto, a kcp built without its release", MountURLContractAuto, http.StatusOK, "v0.0.0-master+$Format:%H$", mount.URLFormHTTPS, 1},
		{"auto, /version refused", MountURLContractAuto, http.StatusForbidden, "", mount.URLFormHTTPS, 1},
		{"https on kcp v0.28.1", MountURLContractHTTPS, http.StatusOK, "v1.31.6+kcp-v0.28.1", mount.URLFormHTTPS, 0},
		{"legacy on kcp v0.34.0", MountURLContractLegacy, http.StatusOK, "v1.37.0+kcp-v0.34.0", mount.URLFormLegacy, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var asked atomic.Int32
			kcp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/version" {
					http.NotFound(w, r)
					return
				}
				asked.Add(1)
				w.Header().Set("Content-Type", "application/json")
				if tc.status != http.StatusOK {
					w.WriteHeader(tc.status)
					_, _ = fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","code":%d}`, tc.status)
					return
				}
				_, _ = fmt.Fprintf(w, `{"major":"1","minor":"31","gitVersion":%q}`, tc.gitVersion)
			}))
			defer kcp.Close()
			shard, err := discovery.NewDiscoveryClientForConfig(&rest.Config{Host: kcp.URL})
			require.NoError(t, err)
			require.Equal(t, tc.want, mountURLForm(t.Context(), tc.contract, shard))
			require.Equal(t, tc.wantAsked, asked.Load())
		})
	}
}
