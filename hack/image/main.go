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

// Command image builds the workspacemounts container image for `make image`,
// with go-containerregistry alone: no container daemon, nothing pulled (an
// empty base and one layer of the binaries make already built, package
// hack/image/oci). It writes, below --out:
//
//	oci/                                     an OCI layout: index.json names the multi-platform index --tag
//	workspacemounts-<tag>.oci.tar            that layout as a tar (podman load, docker load >= 25)
//	workspacemounts-<tag>-<os>-<arch>.docker.tar  one docker-archive per platform, tagged <repository>:<tag>
//
// and prints what it wrote. The creation time is the commit's, so the same
// commit gives the same digests.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/workspacemounts/workspacemounts/hack/image/oci"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		opts                    oci.Options
		platforms, created      string
		repository, tag, outDir string
	)
	flag.StringVar(&opts.Binaries, "binaries", "_output/bin", "the directory of <os>_<arch>/workspacemounts")
	flag.StringVar(&platforms, "platforms", "linux/amd64,linux/arm64", "the image's platforms")
	flag.StringVar(&repository, "repository", "ghcr.io/workspacemounts/workspacemounts", "the repository the docker archives are tagged with")
	flag.StringVar(&tag, "tag", "", "the image's tag (required)")
	flag.StringVar(&opts.Version, "version", "", "the build's version, label org.opencontainers.image.version (required)")
	flag.StringVar(&opts.Revision, "revision", "", "the build's commit, label org.opencontainers.image.revision (required)")
	flag.StringVar(&created, "created", "", "the creation time, RFC 3339: the commit's (git log -1 --format=%cI) (required)")
	flag.StringVar(&outDir, "out", "_output/image", "where to write the layout and the tarballs")
	flag.Parse()
	if tag == "" || created == "" {
		return errors.New("--tag and --created are required")
	}
	var err error
	if opts.Created, err = time.Parse(time.RFC3339, created); err != nil {
		return fmt.Errorf("--created: %w", err)
	}
	if opts.Platforms, err = oci.ParsePlatforms(platforms); err != nil {
		return fmt.Errorf("--platforms: %w", err)
	}
	ref, err := name.NewTag(repository + ":" + tag)
	if err != nil {
		return fmt.Errorf("--repository and --tag: %w", err)
	}

	index, err := oci.Build(opts)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", outDir, err)
	}
	layoutDir := filepath.Join(outDir, "oci")
	if err := oci.WriteLayout(layoutDir, index, ref); err != nil {
		return err
	}
	indexDigest, err := index.Digest()
	if err != nil {
		return fmt.Errorf("the index's digest: %w", err)
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "WROTE\tPLATFORM\tDIGEST\tSIZE\n")
	fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", layoutDir, "index", indexDigest, "")
	archive := filepath.Join(outDir, "workspacemounts-"+tag+".oci.tar")
	if err := oci.TarDir(layoutDir, archive, opts.Created); err != nil {
		return err
	}
	fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", archive, "all", indexDigest, fileSize(archive))
	for _, p := range opts.Platforms {
		img, err := oci.PlatformImage(index, p)
		if err != nil {
			return err
		}
		if err := writeDockerArchive(w, img, p, ref, outDir, tag, opts.Binaries); err != nil {
			return err
		}
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("printing: %w", err)
	}
	return nil
}

// writeDockerArchive writes the docker-archive of one platform's image and
// prints its manifest digest, its layer's compressed size and its
// binary's size.
func writeDockerArchive(w *tabwriter.Writer, img v1.Image, p v1.Platform, ref name.Tag, outDir, tag, binaries string) error {
	digest, err := img.Digest()
	if err != nil {
		return fmt.Errorf("the digest of %s: %w", p, err)
	}
	layers, err := img.Layers()
	if err != nil {
		return fmt.Errorf("the layers of %s: %w", p, err)
	}
	var compressed int64
	for _, l := range layers {
		size, err := l.Size()
		if err != nil {
			return fmt.Errorf("a layer of %s: %w", p, err)
		}
		compressed += size
	}
	file := filepath.Join(outDir, fmt.Sprintf("workspacemounts-%s-%s-%s.docker.tar", tag, p.OS, p.Architecture))
	if err := tarball.WriteToFile(file, ref, img); err != nil {
		return fmt.Errorf("writing %s: %w", file, err)
	}
	binary, err := os.Stat(oci.BinaryPath(binaries, p))
	binarySize := "?"
	if err == nil {
		binarySize = humanSize(binary.Size())
	}
	fmt.Fprintf(w, "%s\t%s\t%s\t%s (layer %s, binary %s)\n", file, p, digest, fileSize(file), humanSize(compressed), binarySize)
	return nil
}

func fileSize(file string) string {
	info, err := os.Stat(file)
	if err != nil {
		return "?"
	}
	return humanSize(info.Size())
}

func humanSize(n int64) string {
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
