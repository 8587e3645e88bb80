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
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// ChecksumsFile is the name of the checksums file of a release, in the
// format of sha256sum (GNU coreutils) and shasum -a 256: one
// "<hex digest>  <file name>" line per file, so that either checks it
// (sha256sum -c SHA256SUMS).
const ChecksumsFile = "SHA256SUMS"

var checksumLine = regexp.MustCompile(`^([0-9a-f]{64}) [ *](\S.*)$`)

// WriteChecksums writes dir/SHA256SUMS: the SHA-256 of every other regular
// file in dir, sorted by name.
func WriteChecksums(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var b strings.Builder
	for _, e := range entries {
		if e.Name() == ChecksumsFile {
			continue
		}
		if !e.Type().IsRegular() {
			return fmt.Errorf("%s: not a regular file; a release attaches files only", filepath.Join(dir, e.Name()))
		}
		sum, err := fileSHA256(filepath.Join(dir, e.Name()))
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s  %s\n", sum, e.Name())
	}
	return os.WriteFile(filepath.Join(dir, ChecksumsFile), []byte(b.String()), 0o644)
}

// ParseChecksums parses the lines of a SHA256SUMS file into file name ->
// digest. A malformed line, a name with a path and a name listed twice are
// errors.
func ParseChecksums(data string) (map[string]string, error) {
	sums := map[string]string{}
	scanner := bufio.NewScanner(strings.NewReader(data))
	for n := 1; scanner.Scan(); n++ {
		m := checksumLine.FindStringSubmatch(scanner.Text())
		if m == nil {
			return nil, fmt.Errorf("line %d: not \"<sha-256 hex>  <file>\": %q", n, scanner.Text())
		}
		name := m[2]
		if name != filepath.Base(name) || name == "." || name == ".." {
			return nil, fmt.Errorf("line %d: %q is not a file name of the release", n, name)
		}
		if _, dup := sums[name]; dup {
			return nil, fmt.Errorf("line %d: %s is listed twice", n, name)
		}
		sums[name] = m[1]
	}
	if err := scanner.Err(); err != nil {
		return nil, err
	}
	if len(sums) == 0 {
		return nil, errors.New("no checksums")
	}
	return sums, nil
}

// VerifyChecksums fails unless dir/SHA256SUMS lists every other file of dir
// exactly once, each with its SHA-256.
func VerifyChecksums(dir string) error {
	data, err := os.ReadFile(filepath.Join(dir, ChecksumsFile))
	if err != nil {
		return err
	}
	sums, err := ParseChecksums(string(data))
	if err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(dir, ChecksumsFile), err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	present := map[string]bool{}
	for _, e := range entries {
		if e.Name() == ChecksumsFile {
			continue
		}
		present[e.Name()] = true
		want, ok := sums[e.Name()]
		if !ok {
			return fmt.Errorf("%s has no checksum in %s", e.Name(), ChecksumsFile)
		}
		got, err := fileSHA256(filepath.Join(dir, e.Name()))
		if err != nil {
			return err
		}
		if got != want {
			return fmt.Errorf("%s: SHA-256 %s, %s says %s", e.Name(), got, ChecksumsFile, want)
		}
	}
	var missing []string
	for name := range sums {
		if !present[name] {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return fmt.Errorf("%s lists files that are not there: %s", ChecksumsFile, strings.Join(missing, ", "))
	}
	return nil
}
