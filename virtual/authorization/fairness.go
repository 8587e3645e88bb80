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
	"sort"
	"strings"

	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/kcp-dev/logicalcluster/v3"

	"github.com/workspacemounts/workspacemounts/pkg/tenant"
)

// UserKey is who a share is counted against (FairnessKey): a SHA-256, so
// that a key is 32 bytes whatever the user's name and groups.
type UserKey [sha256.Size]byte

// serviceAccountClusterKeys are the extras in which kcp names the logical
// cluster a service account belongs to: authentication.kubernetes.io/cluster-name
// up to kcp v0.28 (its fork's serviceaccount.ClusterNameKey), and
// authentication.kcp.io/cluster-name since (this fork's).
var serviceAccountClusterKeys = []string{"authentication.kubernetes.io/cluster-name", serviceaccount.ClusterNameKey}

// FairnessKey is who a user's shares (review turns, requests in flight,
// watches, new review subjects) are counted against. A ServiceAccount is
// the tenant of the logical cluster kcp says it belongs to (tenant.Of with
// pathOf): its org, so that every ServiceAccount of an org and of all the
// workspaces below it holds one share, since whoever may create workspaces
// and ServiceAccounts (and their tokens) in an org may create a thousand;
// a cluster whose path pathOf does not know (nil knows none) is a tenant of
// its own until it does. Any other user is the identity kcp knows: the
// user name and the groups (a set: their order does not matter), not an
// org, since a kcp user is bound to none. Never the UID or any other
// extra: kcp gives each token its own credential id
// (authentication.kubernetes.io/credential-id), and K tokens of one
// identity must be one user, not K. A name with the ServiceAccount prefix
// but no cluster (a plain Kubernetes ServiceAccount) is keyed as any other
// user.
//
// The answers a review gives are another matter: the SubjectAccessReview
// carries the name, the UID and every extra, and kcp may answer differently
// for them, so Reviews keeps answers by a hash of everything (subjectOf).
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

// serviceAccountClusters are the logical clusters kcp names for a
// ServiceAccount, under either key (one value from an honest kcp, the same
// under both when both are set), without duplicates; none for any other user.
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

// writeLengthPrefixed writes s with its length before it, so that no two
// sequences of strings write the same bytes.
func writeLengthPrefixed(h hash.Hash, s string) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(s)))
	h.Write(n[:])
	h.Write([]byte(s))
}

// writeSet writes the strings sorted, after their number.
func writeSet(h hash.Hash, values []string) {
	sorted := append([]string(nil), values...)
	sort.Strings(sorted)
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(sorted)))
	h.Write(n[:])
	for _, v := range sorted {
		writeLengthPrefixed(h, v)
	}
}
