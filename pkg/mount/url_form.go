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
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// URLForm is the form of a mount URL kcp routes, the first part of
// [URLRule]: the form of one kcp release line.
type URLForm string

const (
	// URLFormHTTPS is kcp v0.33 and later's form (the mounts controller of
	// kcp-dev/kcp pkg/reconciler/tenancy/workspacemounts @3f4358ca): https,
	// a host, no user information, no query, no fragment. Stricter than
	// kcp where kcp's words leave room: the scheme is written "https://"
	// in lower case, and an empty query ("?") or fragment ("#") counts.
	URLFormHTTPS URLForm = "https"
	// URLFormLegacy is kcp v0.27 to v0.32's: http or https, a host, no
	// user information.
	URLFormLegacy URLForm = "legacy"
)

// ParseURLForm reads a form by its name; "" is URLFormHTTPS.
func ParseURLForm(name string) (URLForm, error) {
	switch URLForm(name) {
	case "", URLFormHTTPS:
		return URLFormHTTPS, nil
	case URLFormLegacy:
		return URLFormLegacy, nil
	}
	return "", fmt.Errorf("unknown mount URL form %q: want %s or %s", name, URLFormHTTPS, URLFormLegacy)
}

// String is the form's name; the zero value's is "https".
func (f URLForm) String() string {
	if f == "" {
		return string(URLFormHTTPS)
	}
	return string(f)
}

// check returns nil for a URL of the form, else why not, in a few words.
func (f URLForm) check(rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return errors.New("not a URL")
	}
	if f == URLFormLegacy {
		switch {
		case u.Opaque != "" || (u.Scheme != "https" && u.Scheme != "http"):
			return errors.New("not an absolute http or https URL")
		case u.User != nil:
			return errors.New("it carries user information")
		case u.Hostname() == "":
			return errors.New("no host")
		}
		return nil
	}
	switch {
	case u.Opaque == "" && u.Scheme == "http":
		return errors.New("it is http, not https")
	case u.Opaque != "" || u.Scheme != "https":
		return errors.New("not an absolute https URL")
	case u.User != nil:
		return errors.New("it carries user information")
	case u.Hostname() == "":
		return errors.New("no host")
	case !strings.HasPrefix(rawURL, "https://"):
		return errors.New("its scheme is not written in lower case")
	case u.RawQuery != "" || u.ForceQuery:
		return errors.New("it carries a query")
	case strings.Contains(rawURL, "#"):
		// url.Parse cuts at the first "#", and keeps no trace of an
		// empty fragment.
		return errors.New("it carries a fragment")
	}
	return nil
}
