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
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestChecksums(t *testing.T) {
	t.Parallel()
	write := func(t *testing.T, dir, name, content string) {
		t.Helper()
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	release := func(t *testing.T) string {
		t.Helper()
		dir := t.TempDir()
		write(t, dir, "a", "a\n")
		write(t, dir, "b.tgz", "b")
		require.NoError(t, WriteChecksums(dir))
		return dir
	}

	t.Run("sha256sum's format", func(t *testing.T) {
		t.Parallel()
		dir := release(t)
		data, err := os.ReadFile(filepath.Join(dir, ChecksumsFile))
		require.NoError(t, err)
		// sha256sum a b.tgz, by GNU coreutils.
		require.Equal(t, "87428fc522803d31065e7bce3cf03fe475096631e5e07bbd7a0fde60c4cf25c7  a\n"+
			"3e23e8160039594a33894f6564e1b1348bbd7a0088d42c4acb73eeaed59c009d  b.tgz\n", string(data))
		require.NoError(t, VerifyChecksums(dir))
	})
	t.Run("a changed file", func(t *testing.T) {
		t.Parallel()
		dir := release(t)
		write(t, dir, "b.tgz", "c")
		require.ErrorContains(t, VerifyChecksums(dir), "b.tgz: SHA-256 2e7d2c03a9507ae265ecf5b5356885a53393a2029d241394997265a1a25aefc6, SHA256SUMS says 3e23e8")
	})
	t.Run("a file without a checksum", func(t *testing.T) {
		t.Parallel()
		dir := release(t)
		write(t, dir, "c", "c")
		require.ErrorContains(t, VerifyChecksums(dir), "c has no checksum in SHA256SUMS")
	})
	t.Run("a checksum without a file", func(t *testing.T) {
		t.Parallel()
		dir := release(t)
		require.NoError(t, os.Remove(filepath.Join(dir, "a")))
		require.ErrorContains(t, VerifyChecksums(dir), "SHA256SUMS lists files that are not there: a")
	})
	t.Run("no checksums file", func(t *testing.T) {
		t.Parallel()
		require.ErrorIs(t, VerifyChecksums(t.TempDir()), os.ErrNotExist)
	})
	t.Run("a directory is not attached", func(t *testing.T) {
		t.Parallel()
		dir := release(t)
		require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
		require.ErrorContains(t, WriteChecksums(dir), "not a regular file")
	})
}

func TestParseChecksums(t *testing.T) {
	t.Parallel()
	const sum = "87428fc522803d31065e7bce3cf03fe475096631e5e07bbd7a0fde60c4cf25c7"
	for _, tc := range []struct {
		name, data string
		want       map[string]string
		wantErr    string
	}{
		{name: "text mode", data: sum + "  a\n", want: map[string]string{"a": sum}},
		{name: "binary mode", data: sum + " *a\n", want: map[string]string{"a": sum}},
		{name: "a name with spaces", data: sum + "  a b\n", want: map[string]string{"a b": sum}},
		{name: "upper case hex", data: "87428FC522803D31065E7BCE3CF03FE475096631E5E07BBD7A0FDE60C4CF25C7  a\n", wantErr: "line 1: not"},
		{name: "a short digest", data: "87428fc5  a\n", wantErr: "line 1: not"},
		{name: "a path", data: sum + "  ../a\n", wantErr: `line 1: "../a" is not a file name of the release`},
		{name: "twice", data: sum + "  a\n" + sum + "  a\n", wantErr: "line 2: a is listed twice"},
		{name: "empty", data: "", wantErr: "no checksums"},
		{name: "a blank line", data: sum + "  a\n\n", wantErr: "line 2: not"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseChecksums(tc.data)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

// FuzzParseChecksums: whatever it accepts names plain files with 64
// lower-case hex digits each.
func FuzzParseChecksums(f *testing.F) {
	f.Add("87428fc522803d31065e7bce3cf03fe475096631e5e07bbd7a0fde60c4cf25c7  a\n")
	f.Add("87428fc522803d31065e7bce3cf03fe475096631e5e07bbd7a0fde60c4cf25c7 *../a\n")
	f.Fuzz(func(t *testing.T, data string) {
		sums, err := ParseChecksums(data)
		if err != nil {
			return
		}
		for name, sum := range sums {
			if name != filepath.Base(name) || name == "" || name == "." || name == ".." {
				t.Fatalf("accepted the name %q", name)
			}
			if !checksumLine.MatchString(sum + "  x") {
				t.Fatalf("accepted the digest %q", sum)
			}
		}
	})
}
