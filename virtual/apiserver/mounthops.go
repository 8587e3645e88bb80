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

package apiserver

import (
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	"k8s.io/klog/v2"
)

// MountHopsHeader is the header kcp's mount proxy (kcp v0.33 and later) sets
// on every request it forwards to a mount target, with the hops taken so far
// (kcp's pkg/mounts/hops.go): a request carrying it came through a mount.
const MountHopsHeader = "X-Kcp-Mount-Hops"

// withMountHopsRefused answers 403 to every request carrying
// [MountHopsHeader], health checks included, before anything else reads it:
// the virtual workspace is never a legitimate mount target, and kcp asks such
// components to reject these requests outright, so that a mount pointed at
// it neither reaches it with the shard's mount-proxy identity nor loops.
func withMountHopsRefused(handler http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if _, found := req.Header[http.CanonicalHeaderKey(MountHopsHeader)]; !found {
			handler.ServeHTTP(w, req)
			return
		}
		klog.FromContext(req.Context()).V(2).Info("Refusing a request forwarded by a kcp mount proxy", "path", req.URL.Path, "hops", req.Header.Get(MountHopsHeader))
		// 403, not 400: the request is well formed, but this server refuses to
		// be reached through a mount whoever asks, and asking again will not help.
		responsewriters.ErrorNegotiated(&apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure,
			Code:   http.StatusForbidden,
			Reason: metav1.StatusReasonForbidden,
			Message: "the workspacemounts virtual workspace is never a mount target: it refuses requests forwarded by a kcp mount proxy (" +
				MountHopsHeader + "); a mount's status.URL must not point at it",
		}}, codecs, schema.GroupVersion{}, w, req)
	})
}
