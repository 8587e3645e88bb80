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

package doctor

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Print writes results as a table, one row per check (CHECK, STATUS,
// DETAIL) and, under the detail of a check that has one, a row with its
// FIX; or, with format "json", as a JSON array of Results.
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

// oneLine keeps a cell on its row.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
