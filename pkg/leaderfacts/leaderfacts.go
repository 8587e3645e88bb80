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

// Package leaderfacts is what the plugin's leader publishes on its Lease for `workspacemounts
// doctor` (docs/design/pkg-leader.md).
package leaderfacts

import (
	"fmt"
	"strconv"
)

// The annotations of the leader Lease, rewritten by each new leader; facts whose identity is not
// the holder's are a former leader's.
const (
	IdentityAnnotation             = "workspacemounts.io/leader-identity"
	VersionAnnotation              = "workspacemounts.io/leader-version"
	WorkspaceConditionAnnotation   = "workspacemounts.io/workspace-condition"
	WorkspaceURLAnnotation         = "workspacemounts.io/workspace-url"
	TrustsRequestHeadersAnnotation = "workspacemounts.io/trusts-request-headers"
	MountURLContractAnnotation     = "workspacemounts.io/mount-url-contract"
)

// Facts are what the leader publishes.
type Facts struct {
	Identity             string
	Version              string
	WorkspaceCondition   bool
	WorkspaceURL         bool
	TrustsRequestHeaders bool
	MountURLContract     string // "": a release before the flag
}

// Level is 1 for annotations only, 2 with the condition, 3 with spec.URL.
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

// Parse reads the facts, ok false when no leader published any.
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
