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
// doctor` gathers [Facts] (kcp's shards, the plugin's leader Lease, the
// front-proxy's answers, the serving certificate) and [Judge] turns them into
// one [Result] per check, with its fix. Judging asks nothing of anyone, so
// tests give Facts and read verdicts.
package doctor

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/workspacemounts/workspacemounts/pkg/leaderfacts"
)

// Status is a check's verdict: Fail means the installation does not work as
// documented, or is unsafe, until the fix is applied; Warn that it holds for
// now or cannot be told; Skip that a flag of doctor's was not given.
type Status string

// The verdicts.
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

// Failures counts the results that are [Fail]: doctor exits 1 when there is any.
func Failures(results []Result) int {
	n := 0
	for _, r := range results {
		if r.Status == Fail {
			n++
		}
	}
	return n
}

// Facts are what doctor found at Now. Each Err field says why its facts are
// unknown; FrontProxy is nil without --front-proxy-url, ServingCertificate
// without --virtual-workspace-url.
type Facts struct {
	Now                time.Time
	Shards             []ShardFacts
	ShardsErr          error
	Lease              LeaseFacts
	FrontProxy         *FrontProxyFacts
	ServingCertificate *CertificateFacts
}

// ShardFacts are one shard's: its Name (empty for --kubeconfig's one shard),
// its /version gitVersion (v1.31.6+kcp-v0.28.1), and whether its /metrics
// say the feature gate WorkspaceMounts, kcp's in-tree mounts controller, is on.
type ShardFacts struct {
	Name       string
	BaseURL    string
	GitVersion string
	VersionErr error
	Gate       bool
	GateErr    error
}

// LeaseFacts are the plugin's leader Lease, Name being cluster/namespace/name:
// whether it was Found, its holder and until when it holds, and the
// [leaderfacts.Facts] a leader Published on it.
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

// FrontProxyFacts are the front-proxy's answers: to the list at [MappingPath],
// to the [ProbePath] probe (and whether the shard behind it took the probe
// user for the caller), and to /version. Token tells whether a tenant's
// token was sent.
type FrontProxyFacts struct {
	URL           string
	Token         bool
	Mapping       Answer
	Probe         Answer
	ProbeBelieved bool
	GitVersion    string
	VersionErr    error
}

// Answer is an HTTP answer as far as doctor reads it: Err when none came, the
// Kind and APIVersion of a JSON object, a Status's details.group and message,
// and the start of the Body.
type Answer struct {
	Err        error
	Code       int
	Kind       string
	APIVersion string
	Group      string
	Message    string
	Body       string
}

// CertificateFacts are the serving certificate the plugin presents.
type CertificateFacts struct {
	URL       string
	Err       error
	Subject   string
	NotBefore time.Time
	NotAfter  time.Time
}

// Print writes results as a table, a row per check and a "fix:" row under it,
// or with format "json" as a JSON array.
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
