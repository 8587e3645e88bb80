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

// Package doctor judges a workspacemounts installation: `workspacemounts doctor`
// gathers [Facts], and [Judge], which asks nothing of anyone, turns them into
// one [Result] per check with its fix.
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
// documented, or is unsafe, until the fix is applied.
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

// Facts are what doctor found at Now; an Err says why some are unknown, a nil
// pointer that a flag was not given.
type Facts struct {
	Now                time.Time
	Shards             []ShardFacts
	ShardsErr          error
	Lease              LeaseFacts
	FrontProxy         *FrontProxyFacts
	ServingCertificate *CertificateFacts
}

// ShardFacts are one shard's, Name empty for --kubeconfig's; Gate is the feature
// gate WorkspaceMounts.
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

// FrontProxyFacts are the front-proxy's answers; Token tells whether a tenant's
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
