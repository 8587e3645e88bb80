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

package server

import (
	"context"
	"fmt"

	"k8s.io/client-go/discovery"
	"k8s.io/klog/v2"

	"github.com/workspacemounts/workspacemounts/pkg/kcprelease"
	"github.com/workspacemounts/workspacemounts/pkg/mount"
)

// The values of --mount-url-contract: which form of mount URL
// (mount.URLForm) levels 1 and 2 call routable. Level 3 writes spec.URL in
// the https form alone, whatever the flag.
const (
	// MountURLContractAuto: the form of the kcp release each shard's GET
	// /version names (kcprelease.Release.MountURLForm); https when it
	// names none.
	MountURLContractAuto = "auto"
	// MountURLContractHTTPS: mount.URLFormHTTPS, kcp v0.33 and later's.
	MountURLContractHTTPS = "https"
	// MountURLContractLegacy: mount.URLFormLegacy, kcp v0.27 to v0.32's.
	MountURLContractLegacy = "legacy"
)

// validateMountURLContract tells what is wrong with a --mount-url-contract value.
func validateMountURLContract(contract string) error {
	switch contract {
	case MountURLContractAuto, MountURLContractHTTPS, MountURLContractLegacy:
		return nil
	}
	return fmt.Errorf("--mount-url-contract must be auto, https or legacy, not %q", contract)
}

// mountURLForm is the form --mount-url-contract chooses for a shard; with
// auto, the one of the release the shard's version answers (asked once,
// at start), https when it does not answer or names no release; logged.
func mountURLForm(ctx context.Context, contract string, shard discovery.ServerVersionInterface) mount.URLForm {
	logger := klog.FromContext(ctx)
	if contract != MountURLContractAuto {
		form, _ := mount.ParseURLForm(contract) // validated
		logger.Info("mount URL contract", "form", form, "by", "--mount-url-contract")
		return form
	}
	info, err := shard.ServerVersion()
	if err != nil {
		logger.Error(err, "cannot read kcp's release for --mount-url-contract=auto; levels 1 and 2 take the https form, kcp v0.33's", "form", mount.URLFormHTTPS)
		return mount.URLFormHTTPS
	}
	release, err := kcprelease.Parse(info.GitVersion)
	if err != nil {
		logger.Error(err, "kcp names no release for --mount-url-contract=auto; levels 1 and 2 take the https form, kcp v0.33's", "form", mount.URLFormHTTPS)
		return mount.URLFormHTTPS
	}
	form := release.MountURLForm()
	logger.Info("mount URL contract", "form", form, "by", "kcp v"+release.String(), "gitVersion", info.GitVersion)
	return form
}
