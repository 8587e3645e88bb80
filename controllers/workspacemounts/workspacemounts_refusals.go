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
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
)

// URLRefusalRecheck is how long a spec.URL kcp refused is not written again while the mount's URL stays the same.
const URLRefusalRecheck = 30 * MaxRetryDelay

// maxRefusalMessage bounds kcp's message quoted in the status.
const maxRefusalMessage = 512

// urlRefusal is a spec.URL kcp refused for a Workspace, its message and when.
type urlRefusal struct {
	url     string
	message string
	at      time.Time
}

// urlRefusals remembers, per Workspace key, the last spec.URL kcp refused (at most one each): forgotten when the
// mount's URL changes, the recheck is due, the Workspace is unmounted or deleted.
type urlRefusals = keyed[urlRefusal]

// urlRefusedError is a patch that changed spec.URL and that kcp refused with Invalid or Forbidden (its admission, a
// ValidatingAdmissionPolicy, kcp v0.33's rule for mount URLs).
type urlRefusedError struct {
	url string
	err error
}

func (e *urlRefusedError) Error() string {
	return fmt.Sprintf("kcp refused spec.URL %q: %v", e.url, e.err)
}

func (e *urlRefusedError) Unwrap() error { return e.err }

// asURLRefused tells whether err, the answer to a patch of ws's metadata and spec to updated, is kcp refusing updated's
// spec.URL: Invalid or Forbidden, of a patch that changed it.
func asURLRefused(ws, updated *tenancyv1alpha1.Workspace, err error) (*urlRefusedError, bool) {
	if ws.Spec.URL == updated.Spec.URL || !apierrors.IsInvalid(err) && !apierrors.IsForbidden(err) {
		return nil, false
	}
	return &urlRefusedError{url: updated.Spec.URL, err: err}, true
}

// recordRefusal remembers that kcp refused spec.URL refused.url for the Workspace key, at now.
func (r *workspacesReconciler) recordRefusal(key string, refused *urlRefusedError, now time.Time) {
	message := refused.err.Error()
	var status apierrors.APIStatus
	if errors.As(refused.err, &status) {
		message = status.Status().Message // kcp's own, without the committer's wrapping
	}
	message = mount.Truncate(mount.Sanitize(message), maxRefusalMessage)
	r.refusals.put(key, urlRefusal{url: refused.url, message: message, at: now})
}

// applyRefusal keeps a spec.URL kcp refused for the Workspace key out of state (state.urlRefused: [applyURL] writes none)
// while the mount's URL is the refused one and the recheck is not due.
func (r *workspacesReconciler) applyRefusal(key string, ws *tenancyv1alpha1.Workspace, state *mountState, now time.Time) {
	refusal, found := r.refusals.get(key)
	if !found {
		return
	}
	if !state.mounted || ws.Spec.Mount == nil || !r.routing.WorkspaceURL || state.status.URL != refusal.url {
		r.refusals.forget(key) // the URL changed, or is no longer written
		return
	}
	due := refusal.at.Add(URLRefusalRecheck).Sub(now)
	if due <= 0 {
		r.refusals.forget(key) // tried again: the policy may have changed
		return
	}
	state.urlRefused = true
	state.recheckIn(due)
	if !state.status.Ready {
		return // not ready: its own reason says more
	}
	state.status.Ready, state.status.Reason = false, mount.ReasonMountURLInvalid
	state.status.Message = fmt.Sprintf("%s is Ready, but kcp refused spec.URL %s: %s; no traffic is sent to it. "+
		"The plugin writes it again when the mount's URL changes, or in %s.",
		describe(state.status.MountRef), mount.Quote(refusal.url), refusal.message, URLRefusalRecheck)
	state.status = state.status.Bounded()
}
