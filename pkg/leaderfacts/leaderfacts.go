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

// Package leaderfacts is what the plugin's leader publishes about itself on
// its leader Lease, as annotations, for `workspacemounts doctor`: its
// version and the settings that decide whether a kcp around it fits (the
// level, whether its virtual workspace believes request headers). The Lease
// is the one object every deployment of the plugin has (one per kcp, in
// root) and the operator's kubeconfig can read; nothing else records them.
//
// The facts are the leader's: replicas run with the same flags (one
// Deployment), and only the leader writes. A replica started with
// --run-controller=false or --leader-elect=false publishes nothing.
package leaderfacts

import (
	"fmt"
	"strconv"
)

// The annotations of the leader Lease; each is rewritten whenever a replica
// becomes the leader.
const (
	// IdentityAnnotation is the holder identity the facts were published
	// by: facts whose identity is not the Lease's holder are a former
	// leader's (the holder is `workspacemounts cleanup`, or a release that
	// publishes nothing).
	IdentityAnnotation = "workspacemounts.io/leader-identity"
	// VersionAnnotation is the leader's version (`workspacemounts version
	// -o short`).
	VersionAnnotation = "workspacemounts.io/leader-version"
	// WorkspaceConditionAnnotation is "true" when the leader writes the
	// condition WorkspaceMountAvailable (--workspace-condition).
	WorkspaceConditionAnnotation = "workspacemounts.io/workspace-condition"
	// WorkspaceURLAnnotation is "true" when the leader writes spec.URL
	// (--workspace-url), which kcp's in-tree mounts controller writes too.
	WorkspaceURLAnnotation = "workspacemounts.io/workspace-url"
	// TrustsRequestHeadersAnnotation is "true" when the leader's virtual
	// workspace believes X-Remote-User, X-Remote-Group and X-Remote-Extra-*
	// from a front-proxy's client certificate
	// (--requestheader-client-ca-file).
	TrustsRequestHeadersAnnotation = "workspacemounts.io/trusts-request-headers"
	// MountURLContractAnnotation is the leader's --mount-url-contract:
	// auto, https or legacy. A leader of a release before the flag writes
	// none.
	MountURLContractAnnotation = "workspacemounts.io/mount-url-contract"
)

// Facts are what the leader publishes.
type Facts struct {
	Identity             string
	Version              string
	WorkspaceCondition   bool
	WorkspaceURL         bool
	TrustsRequestHeaders bool
	// MountURLContract is --mount-url-contract; "": unknown (a leader of a
	// release before the flag).
	MountURLContract string
}

// Level is the plugin's level (README, "Taking mounts out of traffic"): 1
// annotations only, 2 with the condition, 3 with spec.URL as well.
func (f Facts) Level() int {
	switch {
	case f.WorkspaceURL:
		return 3
	case f.WorkspaceCondition:
		return 2
	default:
		return 1
	}
}

// Annotations are the facts as the Lease's annotations.
func (f Facts) Annotations() map[string]string {
	return map[string]string{
		IdentityAnnotation:             f.Identity,
		VersionAnnotation:              f.Version,
		WorkspaceConditionAnnotation:   strconv.FormatBool(f.WorkspaceCondition),
		WorkspaceURLAnnotation:         strconv.FormatBool(f.WorkspaceURL),
		TrustsRequestHeadersAnnotation: strconv.FormatBool(f.TrustsRequestHeaders),
		MountURLContractAnnotation:     f.MountURLContract,
	}
}

// Parse reads the facts from a Lease's annotations. ok is false when no
// leader has published any (IdentityAnnotation is absent); an annotation
// that is present but not what Annotations writes is an error.
func Parse(annotations map[string]string) (facts Facts, ok bool, err error) {
	identity, ok := annotations[IdentityAnnotation]
	if !ok {
		return Facts{}, false, nil
	}
	facts = Facts{Identity: identity, Version: annotations[VersionAnnotation], MountURLContract: annotations[MountURLContractAnnotation]}
	switch facts.MountURLContract {
	case "", "auto", "https", "legacy":
	default:
		return Facts{}, true, fmt.Errorf("the annotation %s is %q, not auto, https or legacy", MountURLContractAnnotation, facts.MountURLContract)
	}
	for key, into := range map[string]*bool{
		WorkspaceConditionAnnotation:   &facts.WorkspaceCondition,
		WorkspaceURLAnnotation:         &facts.WorkspaceURL,
		TrustsRequestHeadersAnnotation: &facts.TrustsRequestHeaders,
	} {
		value, found := annotations[key]
		if !found {
			return Facts{}, true, fmt.Errorf("the annotation %s is missing beside %s", key, IdentityAnnotation)
		}
		if *into, err = strconv.ParseBool(value); err != nil {
			return Facts{}, true, fmt.Errorf("the annotation %s is %q, not true or false", key, value)
		}
	}
	return facts, true, nil
}
