//go:build tools

// Package tools pins the release's tools (the Makefile builds them into bin/):
// ko builds the image, crane serves a local registry and pushes, krew installs
// the kubectl plugin from the release's manifest, cyclonedx-gomod writes the SBOMs.
package tools

import (
	_ "github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod"
	_ "github.com/google/go-containerregistry/cmd/crane"
	_ "github.com/google/ko"
	_ "sigs.k8s.io/krew/cmd/krew"
)
