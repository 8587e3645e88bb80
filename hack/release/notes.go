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
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Unreleased is the heading of the changes not yet in a release, in the
// format of Keep a Changelog (https://keepachangelog.com/en/1.1.0/).
const Unreleased = "Unreleased"

var (
	// sectionHeading is a release's heading: "## [0.1.0] - 2026-12-03",
	// "## [Unreleased]"; the name is the bracketed part.
	sectionHeading = regexp.MustCompile(`^## \[([^\]]+)\]`)
	// linkDefinition is a Markdown link reference definition, the
	// "[0.1.0]: https://..." lines that close a changelog.
	linkDefinition = regexp.MustCompile(`^\[[^\]]+\]:\s`)
	// errNoSection is returned when the changelog has no section of the
	// name asked for.
	errNoSection = errors.New("no section")
	// inlineLink is the destination of a Markdown inline link or image,
	// "](docs/compatibility.md)".
	inlineLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)
)

// ReleaseName is the name a changelog gives the release of a tag: the tag
// without its leading v (v0.1.0 is "## [0.1.0]").
func ReleaseName(tag string) string {
	return strings.TrimPrefix(tag, "v")
}

// Section returns the body of the changelog's section "## [name]" (name
// also matches a heading that spells it with a leading v): the lines after
// its heading up to the next "## " heading, without the link reference
// definitions that close the file and without surrounding blank lines. It
// fails when there is no such section or when the section is empty.
func Section(changelog, name string) (string, error) {
	var (
		body  []string
		found bool
	)
	for line := range strings.Lines(changelog) {
		line = strings.TrimRight(line, "\r\n")
		if strings.HasPrefix(line, "## ") {
			if found {
				break
			}
			if m := sectionHeading.FindStringSubmatch(line); len(m) == 2 && ReleaseName(m[1]) == ReleaseName(name) {
				found = true
			}
			continue
		}
		if found {
			body = append(body, line)
		}
	}
	if !found {
		return "", fmt.Errorf("%w ## [%s]", errNoSection, ReleaseName(name))
	}
	// The link reference definitions at the end of the file belong to no
	// section; blank lines around the body are no part of it either.
	end := len(body)
	for end > 0 && (strings.TrimSpace(body[end-1]) == "" || linkDefinition.MatchString(body[end-1])) {
		end--
	}
	start := 0
	for start < end && strings.TrimSpace(body[start]) == "" {
		start++
	}
	if start == end {
		return "", fmt.Errorf("the section ## [%s] is empty", ReleaseName(name))
	}
	return strings.Join(body[start:end], "\n") + "\n", nil
}

// Notes returns the release notes of tag from changelog: its section. With
// unreleasedFallback (make release-dry-run, before the section is written),
// a changelog without one gives the [Unreleased] section's, and the second
// result says so; a release (the workflow) never falls back.
func Notes(changelog, tag string, unreleasedFallback bool) (notes, fellBack string, err error) {
	notes, err = Section(changelog, tag)
	if err == nil || !unreleasedFallback || !errors.Is(err, errNoSection) {
		return notes, "", err
	}
	notes, fallbackErr := Section(changelog, Unreleased)
	if fallbackErr != nil {
		return "", "", fmt.Errorf("%w, and %w", err, fallbackErr)
	}
	return notes, fmt.Sprintf("the changelog has no section ## [%s]: these are the notes of ## [%s] (a dry run)", ReleaseName(tag), Unreleased), nil
}

// AbsoluteLinks makes the relative link destinations of notes absolute
// under base (the repository's tree at the tag): a changelog links files of
// the repository relative to itself, and a release's text is shown
// elsewhere. URLs with a scheme, anchors and absolute paths stay as they are.
func AbsoluteLinks(notes, base string) string {
	base = strings.TrimSuffix(base, "/") + "/"
	return inlineLink.ReplaceAllStringFunc(notes, func(link string) string {
		dest := inlineLink.FindStringSubmatch(link)[1]
		if strings.Contains(dest, ":") || strings.HasPrefix(dest, "#") || strings.HasPrefix(dest, "/") {
			return link
		}
		return "](" + base + strings.TrimPrefix(dest, "./") + ")"
	})
}
