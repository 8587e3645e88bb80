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

package authorization

import (
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"slices"
	"strings"

	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/kcp-dev/logicalcluster/v3"

	"github.com/workspacemounts/workspacemounts/pkg/tenant"
)

// UserKey is who a share is counted against, hashed so that a key is 32 bytes whatever the user's name and groups.
type UserKey [sha256.Size]byte

// serviceAccountClusterKeys are the extras in which kcp up to v0.28, and since, names a ServiceAccount's cluster.
var serviceAccountClusterKeys = []string{"authentication.kubernetes.io/cluster-name", serviceaccount.ClusterNameKey}

// FairnessKey is who a user's shares are counted against: a kcp ServiceAccount's tenant ([tenant.Of] its cluster
// with pathOf), any other user's name and set of groups, never the UID or another extra, so that K tokens of one
// identity are one user. Why: docs/design/virtual-authorization.md.
func FairnessKey(u user.Info, pathOf tenant.PathOf) UserKey {
	h := sha256.New()
	if clusters := serviceAccountClusters(u); len(clusters) > 0 {
		tenants := make([]string, 0, len(clusters))
		for _, cluster := range clusters {
			if t := string(tenant.Of(logicalcluster.Name(cluster), pathOf)); !slices.Contains(tenants, t) {
				tenants = append(tenants, t)
			}
		}
		writeLengthPrefixed(h, "tenant") // apart from every user name's hash
		writeSet(h, tenants)
	} else {
		writeLengthPrefixed(h, "user")
		writeLengthPrefixed(h, u.GetName())
		writeSet(h, u.GetGroups())
	}
	var k UserKey
	h.Sum(k[:0])
	return k
}

// serviceAccountClusters are the distinct clusters kcp names for a ServiceAccount under either key; none for any other user.
func serviceAccountClusters(u user.Info) []string {
	if !strings.HasPrefix(u.GetName(), serviceaccount.ServiceAccountUsernamePrefix) {
		return nil
	}
	var clusters []string
	for _, key := range serviceAccountClusterKeys {
		for _, cluster := range u.GetExtra()[key] {
			if cluster != "" && !slices.Contains(clusters, cluster) {
				clusters = append(clusters, cluster)
			}
		}
	}
	return clusters
}

// writeLengthPrefixed writes s after its length, so that no two sequences of strings write the same bytes.
func writeLengthPrefixed(h hash.Hash, s string) {
	h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(s))))
	h.Write([]byte(s))
}

// writeSet writes the strings sorted, after their number.
func writeSet(h hash.Hash, values []string) {
	h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(values))))
	for _, v := range slices.Sorted(slices.Values(values)) {
		writeLengthPrefixed(h, v)
	}
}
