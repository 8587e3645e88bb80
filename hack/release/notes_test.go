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

package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const changelog = `# Changelog

Intro text.

## [Unreleased]

### Added

- the next thing

## [0.2.0] - 2026-12-24

### Fixed

- a bug

## [0.1.0] - 2026-12-03

First release.

[Unreleased]: https://example.com/compare/v0.2.0...HEAD
[0.2.0]: https://example.com/releases/tag/v0.2.0
[0.1.0]: https://example.com/releases/tag/v0.1.0
`

func TestSection(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, changelog, section string
		want                     string
		wantErr                  string
	}{
		{name: "a middle section, by tag", changelog: changelog, section: "v0.2.0", want: "### Fixed\n\n- a bug\n"},
		{name: "a middle section, by name", changelog: changelog, section: "0.2.0", want: "### Fixed\n\n- a bug\n"},
		{name: "the last section, without the link definitions", changelog: changelog, section: "v0.1.0", want: "First release.\n"},
		{name: "unreleased", changelog: changelog, section: Unreleased, want: "### Added\n\n- the next thing\n"},
		{name: "a heading that spells the v", changelog: "## [v1.0.0]\nnotes\n", section: "v1.0.0", want: "notes\n"},
		{name: "CRLF line ends", changelog: "## [1.0.0]\r\nnotes\r\n## [0.9.0]\r\nold\r\n", section: "v1.0.0", want: "notes\n"},
		{name: "missing", changelog: changelog, section: "v0.3.0", wantErr: "no section ## [0.3.0]"},
		{name: "a prefix of another version is not it", changelog: changelog, section: "v0.2", wantErr: "no section ## [0.2]"},
		{name: "a level 3 heading is not a section", changelog: "### [1.0.0]\nnotes\n", section: "v1.0.0", wantErr: "no section"},
		{name: "empty", changelog: "## [1.0.0]\n\n## [0.9.0]\nold\n", section: "v1.0.0", wantErr: "the section ## [1.0.0] is empty"},
		{name: "only link definitions", changelog: "## [1.0.0]\n\n[1.0.0]: https://example.com\n", section: "v1.0.0", wantErr: "is empty"},
		{name: "no changelog", changelog: "", section: "v1.0.0", wantErr: "no section"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := Section(tc.changelog, tc.section)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestNotes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, changelog, tag string
		fallback             bool
		want, wantFellBack   string
		wantErr              string
	}{
		{name: "a release's section", changelog: changelog, tag: "v0.2.0", want: "### Fixed\n\n- a bug\n"},
		{name: "a release's section, fallback allowed but not needed", changelog: changelog, tag: "v0.2.0", fallback: true, want: "### Fixed\n\n- a bug\n"},
		{name: "a release never falls back", changelog: changelog, tag: "v0.3.0", wantErr: "no section ## [0.3.0]"},
		{name: "a dry run falls back to Unreleased", changelog: changelog, tag: "v0.3.0", fallback: true,
			want: "### Added\n\n- the next thing\n", wantFellBack: "no section ## [0.3.0]: these are the notes of ## [Unreleased]"},
		{name: "an empty section is an error, not a fallback", changelog: "## [Unreleased]\n- x\n## [0.3.0]\n", tag: "v0.3.0", fallback: true, wantErr: "is empty"},
		{name: "no Unreleased to fall back to", changelog: "## [0.1.0]\n- x\n", tag: "v0.3.0", fallback: true, wantErr: "no section ## [0.3.0], and no section ## [Unreleased]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, fellBack, err := Notes(tc.changelog, tc.tag, tc.fallback)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
			if tc.wantFellBack == "" {
				require.Empty(t, fellBack)
			} else {
				require.Contains(t, fellBack, tc.wantFellBack)
			}
		})
	}
}

func TestAbsoluteLinks(t *testing.T) {
	t.Parallel()
	const base = "https://github.com/o/r/blob/v1.0.0"
	for _, tc := range []struct{ in, want string }{
		{in: "see [docs](docs/compatibility.md).", want: "see [docs](https://github.com/o/r/blob/v1.0.0/docs/compatibility.md)."},
		{in: "[VERSION](./VERSION) and ![img](docs/a.png)", want: "[VERSION](https://github.com/o/r/blob/v1.0.0/VERSION) and ![img](https://github.com/o/r/blob/v1.0.0/docs/a.png)"},
		{in: "[semver](https://semver.org/)", want: "[semver](https://semver.org/)"},
		{in: "[mail](mailto:a@b.c) [here](#upgrade) [root](/x)", want: "[mail](mailto:a@b.c) [here](#upgrade) [root](/x)"},
		{in: "a (plain) parenthesis and `f(x)`", want: "a (plain) parenthesis and `f(x)`"},
	} {
		require.Equal(t, tc.want, AbsoluteLinks(tc.in, base+"/"), tc.in)
	}
}

// FuzzSection: any changelog and name give either an error or a non-empty
// section whose lines are lines of the changelog, none of them a "## "
// heading.
func FuzzSection(f *testing.F) {
	f.Add(changelog, "v0.1.0")
	f.Add(changelog, Unreleased)
	f.Add("## [1.0.0]\r\n\r\n[1.0.0]: x\n", "1.0.0")
	f.Fuzz(func(t *testing.T, changelog, name string) {
		got, err := Section(changelog, name)
		if err != nil {
			return
		}
		if strings.TrimSpace(got) == "" {
			t.Fatalf("Section(%q) returned an empty section", name)
		}
		lines := map[string]bool{}
		for line := range strings.Lines(changelog) {
			lines[strings.TrimRight(line, "\r\n")] = true
		}
		for line := range strings.Lines(got) {
			line = strings.TrimSuffix(line, "\n")
			if strings.HasPrefix(line, "## ") {
				t.Fatalf("the section of %q has a heading: %q", name, line)
			}
			if !lines[line] {
				t.Fatalf("the section of %q has a line that is not the changelog's: %q", name, line)
			}
		}
	})
}
