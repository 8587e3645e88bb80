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

// Command release makes and checks the files of a release that are not the
// image and the chart (make release-artifacts, make release-dry-run and
// .github/workflows/release.yaml run it; see the Makefile):
//
//	release notes --changelog CHANGELOG.md --tag v0.1.0 [--unreleased-fallback]
//	    prints the changelog's section of the tag, the release notes (relative
//	    links made absolute, into the repository at the tag)
//	release sbom --version V --created T --out F BINARY...
//	    writes the CycloneDX SBOM of the binaries, from their Go build information
//	release plugin --tag T --created C --platforms P --out DIR
//	    writes the kubectl plugin's archives (binary and LICENSE, per
//	    platform) and its krew manifest, workspacemounts.yaml, into DIR
//	release checksums DIR
//	    writes DIR/SHA256SUMS, the SHA-256 of every other file of DIR
//	release verify --dir DIR --tag T --version V --notes F --platforms P
//	    checks what the others wrote: the checksums, the SBOM against the
//	    binaries of the platforms, the plugin's archives and krew manifest,
//	    the notes
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return errors.New("a command is required: notes, sbom, plugin, checksums or verify")
	}
	switch args[0] {
	case "notes":
		return runNotes(args[1:])
	case "sbom":
		return runSBOM(args[1:])
	case "plugin":
		return runPlugin(args[1:])
	case "checksums":
		fs := flag.NewFlagSet("checksums", flag.ContinueOnError)
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if fs.NArg() != 1 {
			return errors.New("checksums: one directory is required")
		}
		return WriteChecksums(fs.Arg(0))
	case "verify":
		return runVerify(args[1:])
	default:
		return fmt.Errorf("unknown command %q: notes, sbom, plugin, checksums or verify", args[0])
	}
}

func runNotes(args []string) error {
	fs := flag.NewFlagSet("notes", flag.ContinueOnError)
	changelog := fs.String("changelog", "CHANGELOG.md", "the changelog")
	tag := fs.String("tag", "", "the release's tag, v0.1.0: its section is ## [0.1.0] (required)")
	fallback := fs.Bool("unreleased-fallback", false, "without a section for the tag, print ## [Unreleased]'s (dry runs; never for a release)")
	repository := fs.String("repository", "https://github.com/workspacemounts/workspacemounts", "the repository whose tree at the tag relative links point into")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *tag == "" || fs.NArg() != 0 {
		return errors.New("notes: --tag is required, and takes no arguments")
	}
	data, err := os.ReadFile(*changelog)
	if err != nil {
		return err
	}
	notes, fellBack, err := Notes(string(data), *tag, *fallback)
	if err != nil {
		return fmt.Errorf("the release notes of %s in %s: %w", *tag, *changelog, err)
	}
	if fellBack != "" {
		fmt.Fprintln(os.Stderr, "release notes:", fellBack)
	}
	_, err = os.Stdout.WriteString(AbsoluteLinks(notes, *repository+"/blob/"+*tag))
	return err
}

func runSBOM(args []string) error {
	fs := flag.NewFlagSet("sbom", flag.ContinueOnError)
	version := fs.String("version", "", "the binaries' version (make's VERSION) (required)")
	created := fs.String("created", "", "the SBOM's time, RFC 3339: the commit's (required)")
	out := fs.String("out", "", "the SBOM file to write (required)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *version == "" || *created == "" || *out == "" || fs.NArg() == 0 {
		return errors.New("sbom: --version, --created, --out and at least one binary are required")
	}
	t, err := time.Parse(time.RFC3339, *created)
	if err != nil {
		return fmt.Errorf("--created: %w", err)
	}
	binaries, err := readBinaries(fs.Args())
	if err != nil {
		return err
	}
	bom, err := NewSBOM(*version, t, binaries)
	if err != nil {
		return err
	}
	return WriteSBOM(*out, bom)
}

func readBinaries(paths []string) ([]Binary, error) {
	var binaries []Binary
	for _, p := range paths {
		b, err := ReadBinary(p)
		if err != nil {
			return nil, err
		}
		binaries = append(binaries, b)
	}
	return binaries, nil
}

// BinaryName is the name of a platform's binary in a release:
// workspacemounts-v0.1.0-linux-amd64.
func BinaryName(tag, platform string) string {
	return "workspacemounts-" + tag + "-" + strings.ReplaceAll(platform, "/", "-")
}

// SBOMName is the name of a release's SBOM: workspacemounts-v0.1.0.cdx.json.
func SBOMName(tag string) string {
	return "workspacemounts-" + tag + ".cdx.json"
}

func runVerify(args []string) error {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	dir := fs.String("dir", "", "the release's files (required)")
	tag := fs.String("tag", "", "the release's tag, in the files' names (required)")
	version := fs.String("version", "", "the binaries' version (required)")
	notes := fs.String("notes", "", "the release notes (required)")
	platforms := fs.String("platforms", "", "the binaries' platforms, comma-separated os/arch (required)")
	krewSource := fs.String("manifest", "deploy/krew/workspacemounts.yaml", "the krew manifest's source")
	downloadURL := fs.String("download-url", DownloadURL, "where the release's files are downloaded: <url>/<tag>/<file>")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" || *tag == "" || *version == "" || *notes == "" || *platforms == "" || fs.NArg() != 0 {
		return errors.New("verify: --dir, --tag, --version, --notes and --platforms are required, and it takes no arguments")
	}
	if err := VerifyChecksums(*dir); err != nil {
		return err
	}
	var paths []string
	for p := range strings.SplitSeq(*platforms, ",") {
		paths = append(paths, filepath.Join(*dir, BinaryName(*tag, p)))
	}
	binaries, err := readBinaries(paths)
	if err != nil {
		return err
	}
	bom, err := ReadSBOM(filepath.Join(*dir, SBOMName(*tag)))
	if err != nil {
		return err
	}
	if err := CheckSBOM(bom, *version, binaries); err != nil {
		return err
	}
	source, err := ReadKrewManifest(*krewSource)
	if err != nil {
		return err
	}
	manifest, err := ReadKrewManifest(filepath.Join(*dir, KrewManifestName))
	if err != nil {
		return err
	}
	if err := CheckKrewManifest(manifest, source, *tag, *downloadURL, *dir, strings.Split(*platforms, ",")); err != nil {
		return err
	}
	data, err := os.ReadFile(*notes)
	if err != nil {
		return err
	}
	if strings.TrimSpace(string(data)) == "" {
		return fmt.Errorf("the release notes %s are empty", *notes)
	}
	fmt.Printf("verified %s: %s covers every file; %s names %s@%s and the %d modules linked into %d binaries, with their versions and SHA-256; %s names the %d archives of %s with their SHA-256; %s has %d lines\n",
		*dir, ChecksumsFile, SBOMName(*tag), bom.Metadata.Component.Name, *version, len(*bom.Components)-len(binaries), len(binaries), KrewManifestName, len(manifest.Spec.Platforms), PluginBinary, *notes, strings.Count(string(data), "\n"))
	return nil
}
