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
	"fmt"
	"hash"
	"maps"
	"slices"
	"strings"
	"time"

	"golang.org/x/time/rate"

	utilcache "k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/utils/clock"

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

// ErrSubjectRate fails a review whose tenant brought more new subjects than its rate allows: a kind of
// [ErrUserShare], answered 429, touching no one else's reviews.
var ErrSubjectRate = fmt.Errorf("%w: new subjects of the tenant over their rate", ErrUserShare)

// subject is a user as a review sees them: a hash of name, UID, groups and extra.
type subject [sha256.Size]byte

// subjectOf hashes everything a review depends on of a user, each part length-prefixed.
func subjectOf(u user.Info) subject {
	h := sha256.New()
	writeLengthPrefixed(h, u.GetName())
	writeLengthPrefixed(h, u.GetUID())
	writeSet(h, u.GetGroups())
	extra := u.GetExtra()
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		writeLengthPrefixed(h, k)
		writeLengthPrefixed(h, fmt.Sprint(len(extra[k])))
		for _, v := range extra[k] {
			writeLengthPrefixed(h, v)
		}
	}
	var s subject
	h.Sum(s[:0])
	return s
}

// newSubjects bounds, per tenant, the rate of review subjects not seen lately: a token bucket per [FairnessKey]
// charged once per subject, which is then known for ttl in a bounded LRU (one forgotten early is charged again,
// to its own tenant only).
type newSubjects struct {
	buckets *tenant.Limiters[UserKey]
	known   *utilcache.LRUExpireCache // subject -> struct{}, for ttl
	ttl     time.Duration
}

func newNewSubjects(limit rate.Limit, burst, size int, ttl time.Duration, clk clock.PassiveClock) *newSubjects {
	return &newSubjects{
		buckets: tenant.NewLimiters[UserKey](limit, burst, clk.Now),
		known:   utilcache.NewLRUExpireCacheWithClock(size, clk), ttl: ttl,
	}
}

// admit tells whether a review of s may be asked: s is known, or the tenant's bucket has a token for it.
func (n *newSubjects) admit(s subject, fair UserKey) bool {
	if _, found := n.known.Get(s); found {
		return true
	}
	if ok, _ := n.buckets.Allow(fair); !ok {
		return false
	}
	n.known.Add(s, struct{}{}, n.ttl)
	return true
}
