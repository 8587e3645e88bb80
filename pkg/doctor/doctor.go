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

// Package doctor judges a workspacemounts installation: `workspacemounts
// doctor` gathers Facts (kcp's shards, the plugin's leader Lease, what the
// front-proxy answers, the serving certificate; gather.go and the command)
// and Judge turns them into one Result per check, each with its fix. Judging
// asks nothing of anyone: every verdict follows from the Facts alone, so
// that the tests give Facts and read verdicts.
package doctor

import (
	"time"

	"github.com/workspacemounts/workspacemounts/pkg/leaderfacts"
)

// Status is a check's verdict.
type Status string

const (
	// OK: the check holds.
	OK Status = "OK"
	// Fail: it does not; the installation does not work as documented (or
	// is unsafe) until the fix is applied.
	Fail Status = "FAIL"
	// Warn: it holds for now, or cannot be told for sure; the detail says
	// which.
	Warn Status = "WARN"
	// Skip: not checked, for want of an input (a flag of doctor's).
	Skip Status = "SKIP"
)

// Result is one row of doctor's table.
type Result struct {
	Check  string `json:"check"`
	Status Status `json:"status"`
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

// Failures counts the results that are FAIL: doctor's exit status is 1
// when there is any, else 0 (WARN and SKIP do not fail).
func Failures(results []Result) int {
	n := 0
	for _, r := range results {
		if r.Status == Fail {
			n++
		}
	}
	return n
}

// Facts are what doctor found.
type Facts struct {
	// Now is when the facts were gathered (expiries are judged against it).
	Now time.Time
	// Shards are kcp's shards (the --kubeconfig's one, or every Shard in
	// root); ShardsErr is why they could not be listed.
	Shards    []ShardFacts
	ShardsErr error
	Lease     LeaseFacts
	// FrontProxy is nil without --front-proxy-url.
	FrontProxy *FrontProxyFacts
	// ServingCertificate is nil without --virtual-workspace-url.
	ServingCertificate *CertificateFacts
}

// ShardFacts are one shard's.
type ShardFacts struct {
	// Name is the Shard's name, empty for the one shard of --kubeconfig.
	Name    string
	BaseURL string
	// GitVersion is the shard's GET /version gitVersion
	// (v1.31.6+kcp-v0.28.1); VersionErr why it is unknown.
	GitVersion string
	VersionErr error
	// Gate is whether kcp's in-tree mounts controller runs (the feature
	// gate WorkspaceMounts is on), from the shard's /metrics; GateErr why
	// it is unknown.
	Gate    bool
	GateErr error
}

// LeaseFacts are the plugin's leader Lease.
type LeaseFacts struct {
	// Name is cluster/namespace/name.
	Name string
	// Found is false when the Lease does not exist; Err is any other
	// failure to read it.
	Found bool
	Err   error
	// Holder is spec.holderIdentity; Renewed and Duration say until when it
	// holds.
	Holder   string
	Renewed  time.Time
	Duration time.Duration
	// Published tells whether a leader published Facts (pkg/leaderfacts);
	// FactsErr is why they could not be read.
	Published bool
	Facts     leaderfacts.Facts
	FactsErr  error
}

// FrontProxyFacts are the front-proxy's answers.
type FrontProxyFacts struct {
	URL string
	// Token tells whether a tenant's token was sent.
	Token bool
	// Mapping is its answer to a list of workspacemounts at
	// MappingPath.
	Mapping Answer
	// Probe is its answer to ProbePath with the probe headers
	// (ProbeUser, ProbeGroup); ProbeBelieved tells whether the shard
	// behind it took the probe user for the caller.
	Probe         Answer
	ProbeBelieved bool
	// GitVersion is its answer to GET /version; VersionErr why there is
	// none.
	GitVersion string
	VersionErr error
}

// Answer is an HTTP answer, as far as doctor reads it.
type Answer struct {
	// Err is set when no answer came.
	Err  error
	Code int
	// Kind and APIVersion are those of a JSON object answered; Group is a
	// Status's details.group; Message a Status's message.
	Kind       string
	APIVersion string
	Group      string
	Message    string
	// Body is the start of the body, for the detail.
	Body string
}

// CertificateFacts are the serving certificate the plugin presents.
type CertificateFacts struct {
	URL       string
	Err       error
	Subject   string
	NotBefore time.Time
	NotAfter  time.Time
}
