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
	"context"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
)

// ReviewFunc asks kcp, by one SubjectAccessReview, whether the subject of spec may do what spec says in cluster.
type ReviewFunc func(ctx context.Context, cluster logicalcluster.Name, spec authorizationv1.SubjectAccessReviewSpec) (allowed bool, err error)

// NewSubjectAccessReviewer posts SubjectAccessReviews to /clusters/<cluster>/ below cfg.Host, the shard's base URL,
// through one REST client for every cluster: one connection pool and one rate limit (cfg's QPS and Burst).
func NewSubjectAccessReviewer(cfg *rest.Config) (ReviewFunc, error) {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	restClient := client.AuthorizationV1().RESTClient()
	return func(ctx context.Context, cluster logicalcluster.Name, spec authorizationv1.SubjectAccessReviewSpec) (bool, error) {
		var result authorizationv1.SubjectAccessReview
		err := restClient.Post().
			AbsPath(cluster.Path().RequestPath(), "apis", authorizationv1.SchemeGroupVersion.Group, authorizationv1.SchemeGroupVersion.Version, "subjectaccessreviews").
			Body(&authorizationv1.SubjectAccessReview{Spec: spec}).
			Do(ctx).
			Into(&result)
		if err != nil {
			return false, err
		}
		return result.Status.Allowed && !result.Status.Denied, nil
	}, nil
}

// ReviewByShard sends each review to the shard holding its cluster, as shardOf tells; a cluster no shard holds
// fails with [ErrNoSuchCluster].
func ReviewByShard(shardOf func(cluster logicalcluster.Name) (ReviewFunc, bool)) ReviewFunc {
	return func(ctx context.Context, cluster logicalcluster.Name, spec authorizationv1.SubjectAccessReviewSpec) (bool, error) {
		review, found := shardOf(cluster)
		if !found {
			return false, fmt.Errorf("%w: no shard holds logical cluster %s", ErrNoSuchCluster, cluster)
		}
		return review(ctx, cluster, spec)
	}
}

// spec is the SubjectAccessReview asked for verb on workspaces.
func spec(u user.Info, verb string) authorizationv1.SubjectAccessReviewSpec {
	var extra map[string]authorizationv1.ExtraValue
	if len(u.GetExtra()) > 0 {
		extra = make(map[string]authorizationv1.ExtraValue, len(u.GetExtra()))
		for k, v := range u.GetExtra() {
			extra[k] = v
		}
	}
	return authorizationv1.SubjectAccessReviewSpec{
		User: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups(), Extra: extra,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb:     verb,
			Group:    tenancyv1alpha1.SchemeGroupVersion.Group,
			Version:  tenancyv1alpha1.SchemeGroupVersion.Version,
			Resource: "workspaces",
		},
	}
}
