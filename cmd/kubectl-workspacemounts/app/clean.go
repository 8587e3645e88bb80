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

package app

import (
	"fmt"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
)

// maxShown bounds each string of kcp's that why and tree show.
const maxShown = 256

// clean makes s one line of plain text with [mount.Sanitize]: every string others wrote goes through it before it
// reaches the terminal (cli-runtime's table printer escapes only ESC and CR).
func clean(s string) string {
	return mount.Sanitize(s)
}

// shown is clean, cut to maxShown bytes.
func shown(s string) string {
	return mount.Truncate(clean(s), maxShown)
}

// printf is fmt.Fprintf with every argument cleaned; the format, the program's, keeps its tabs and new lines.
func printf(w io.Writer, format string, args ...any) {
	for i, a := range args {
		args[i] = clean(fmt.Sprint(a))
	}
	_, _ = fmt.Fprintf(w, format, args...) // the writer's error is Flush's
}

// cleanTable cleans the column names and every cell of a Table in place: a string as it is, anything but a
// number or a bool as %v prints it.
func cleanTable(t *metav1.Table) {
	for i := range t.ColumnDefinitions {
		t.ColumnDefinitions[i].Name = clean(t.ColumnDefinitions[i].Name)
	}
	for _, row := range t.Rows {
		for i, cell := range row.Cells {
			switch v := cell.(type) {
			case nil, bool, int, int32, int64, float32, float64:
			case string:
				row.Cells[i] = clean(v)
			default:
				row.Cells[i] = clean(fmt.Sprint(v))
			}
		}
	}
}
