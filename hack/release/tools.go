//go:build tools

// The release workflow pushes the image with crane, built from this module
// (make bin/crane) so that it is the go-containerregistry that hack/image
// builds the image with; this import keeps it in go.mod.
package main

import (
	_ "github.com/google/go-containerregistry/cmd/crane"
)
