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

// Package doctor judges a workspacemounts installation: it gathers [Facts], and [Judge] turns them
// into one [Result] per check with its fix (docs/design/pkg-doctor.md).
package doctor

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apimachineryversion "k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/rest"

	"github.com/workspacemounts/workspacemounts/pkg/leaderfacts"
)

// Status is a check's verdict: Fail means the installation does not work as documented, or is
// unsafe, until the fix is applied.
type Status string

const (
	OK   Status = "OK"
	Fail Status = "FAIL"
	Warn Status = "WARN"
	Skip Status = "SKIP"
)

// Result is one row of doctor's table.
type Result struct {
	Check  string `json:"check"`
	Status Status `json:"status"`
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

// Failures counts the results that fail doctor.
func Failures(results []Result) int {
	n := 0
	for _, r := range results {
		if r.Status == Fail {
			n++
		}
	}
	return n
}

// Facts are what doctor found at Now; an Err says why some are unknown, a nil pointer that a flag
// was not given.
type Facts struct {
	Now                time.Time
	Shards             []ShardFacts
	ShardsErr          error
	Lease              LeaseFacts
	FrontProxy         *FrontProxyFacts
	ServingCertificate *CertificateFacts
}

// ShardFacts are one shard's, Name empty for --kubeconfig's; Gate is the feature gate
// WorkspaceMounts.
type ShardFacts struct {
	Name       string
	BaseURL    string
	GitVersion string
	VersionErr error
	Gate       bool
	GateErr    error
}

// LeaseFacts are the plugin's leader Lease, Name being cluster/namespace/name.
type LeaseFacts struct {
	Name      string
	Found     bool
	Err       error
	Holder    string
	Renewed   time.Time
	Duration  time.Duration
	Published bool
	Facts     leaderfacts.Facts
	FactsErr  error
}

// FrontProxyFacts are the front-proxy's answers; Token tells whether a tenant's token was sent.
type FrontProxyFacts struct {
	URL           string
	Token         bool
	Mapping       Answer
	Probe         Answer
	ProbeBelieved bool
	GitVersion    string
	VersionErr    error
}

// Answer is an HTTP answer as far as doctor reads it.
type Answer struct {
	Err        error
	Code       int
	Kind       string
	APIVersion string
	Group      string
	Message    string
	Body       string
}

type CertificateFacts struct {
	URL       string
	Err       error
	Subject   string
	NotBefore time.Time
	NotAfter  time.Time
}

// Print writes results as a table, or with format "json" as a JSON array.
func Print(w io.Writer, results []Result, format string) error {
	switch format {
	case "json":
		data, err := json.MarshalIndent(results, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(w, string(data))
		return err
	case "", "table":
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "CHECK\tSTATUS\tDETAIL / FIX")
		for _, r := range results {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Check, r.Status, oneLine(r.Detail))
			if r.Fix != "" {
				fmt.Fprintf(tw, "\t\tfix: %s\n", oneLine(r.Fix))
			}
		}
		return tw.Flush()
	}
	return fmt.Errorf("--output must be table or json, not %q", format)
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// ShardVersion is the gitVersion of the shard client talks to. Gathering asks one thing of one
// server and writes nothing.
func ShardVersion(ctx context.Context, client rest.Interface) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	body, err := client.Get().AbsPath("/version").Do(ctx).Raw()
	if err != nil {
		return "", err
	}
	var info apimachineryversion.Info
	if err := json.Unmarshal(body, &info); err != nil {
		return "", fmt.Errorf("GET /version: %w", err)
	}
	if info.GitVersion == "" {
		return "", fmt.Errorf("GET /version answered no gitVersion: %s", excerpt(body))
	}
	return info.GitVersion, nil
}

func LeaseFactsOf(name string, lease *coordinationv1.Lease, err error) LeaseFacts {
	f := LeaseFacts{Name: name}
	switch {
	case apierrors.IsNotFound(err):
		return f
	case err != nil:
		f.Err = err
		return f
	}
	f.Found = true
	if lease.Spec.HolderIdentity != nil {
		f.Holder = *lease.Spec.HolderIdentity
	}
	if lease.Spec.RenewTime != nil {
		f.Renewed = lease.Spec.RenewTime.Time
	}
	if lease.Spec.LeaseDurationSeconds != nil {
		f.Duration = time.Duration(*lease.Spec.LeaseDurationSeconds) * time.Second
	}
	f.Facts, f.Published, f.FactsErr = leaderfacts.Parse(lease.Annotations)
	return f
}

// FrontProxy asks the front-proxy at baseURL for the mapping, the probe and /version, with a
// tenant's token if any.
func FrontProxy(ctx context.Context, client *http.Client, baseURL, token string) *FrontProxyFacts {
	baseURL = strings.TrimSuffix(baseURL, "/")
	f := &FrontProxyFacts{URL: baseURL, Token: token != ""}
	f.Mapping = ask(ctx, client, http.MethodGet, baseURL+MappingPath+"?limit=1", token, nil, nil)

	review := []byte(`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`)
	probe := http.Header{"X-Remote-User": {ProbeUser}, "X-Remote-Group": {ProbeGroup}}
	var answered authenticationv1.SelfSubjectReview
	f.Probe = ask(ctx, client, http.MethodPost, baseURL+ProbePath, token, probe, review, &answered)
	f.ProbeBelieved = probeBelieved(f.Probe, answered)

	var info struct {
		GitVersion string `json:"gitVersion"`
	}
	version := ask(ctx, client, http.MethodGet, baseURL+"/version", token, nil, nil, &info)
	switch {
	case version.Err != nil:
		f.VersionErr = version.Err
	case version.Code != http.StatusOK || info.GitVersion == "":
		f.VersionErr = fmt.Errorf("GET /version answered %d (%s)", version.Code, version.describe())
	default:
		f.GitVersion = info.GitVersion
	}
	return f
}

// probeBelieved tells whether kcp took the probe headers for the caller's, in a review or in a
// refusal.
func probeBelieved(a Answer, review authenticationv1.SelfSubjectReview) bool {
	switch a.Code {
	case http.StatusOK, http.StatusCreated:
		return review.Status.UserInfo.Username == ProbeUser || slices.Contains(review.Status.UserInfo.Groups, ProbeGroup)
	case http.StatusForbidden:
		return strings.Contains(a.Message, `"`+ProbeUser+`"`)
	}
	return false
}

func ask(ctx context.Context, client *http.Client, method, url, token string, header http.Header, body []byte, into ...any) Answer {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return Answer{Err: err}
	}
	maps.Copy(req.Header, header)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return Answer{Err: err}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return Answer{Err: err}
	}
	a := Answer{Code: resp.StatusCode, Body: excerpt(data)}
	var object struct {
		metav1.TypeMeta
		Message string                `json:"message"`
		Details *metav1.StatusDetails `json:"details"`
	}
	if json.Unmarshal(data, &object) == nil {
		a.Kind, a.APIVersion, a.Message = object.Kind, object.APIVersion, object.Message
		if object.Details != nil {
			a.Group = object.Details.Group
		}
		if a.Code/100 == 2 {
			for _, v := range into {
				_ = json.Unmarshal(data, v)
			}
		}
	}
	return a
}

func excerpt(data []byte) string {
	const most = 200
	s := strings.TrimSpace(string(data))
	if len(s) > most {
		s = s[:most] + "..."
	}
	return s
}

// ServingCertificate is the certificate the server at rawURL presents, read but not verified.
func ServingCertificate(ctx context.Context, rawURL string) *CertificateFacts {
	f := &CertificateFacts{URL: rawURL}
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		f.Err = fmt.Errorf("%q is not an https:// URL", rawURL)
		return f
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "443")
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	dialer := &tls.Dialer{Config: &tls.Config{ServerName: u.Hostname(), InsecureSkipVerify: true}} // the certificate is read, not trusted
	conn, err := dialer.DialContext(ctx, "tcp", host)
	if err != nil {
		f.Err = err
		return f
	}
	defer conn.Close()
	certs := conn.(*tls.Conn).ConnectionState().PeerCertificates
	if len(certs) == 0 {
		f.Err = errors.New("no certificate presented")
		return f
	}
	f.Subject, f.NotBefore, f.NotAfter = certs[0].Subject.String(), certs[0].NotBefore, certs[0].NotAfter
	return f
}
