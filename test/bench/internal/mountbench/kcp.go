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

package mountbench

import (
	"context"
	"fmt"

	"github.com/workspacemounts/workspacemounts/test/framework"
)

// kcpServer is a kcp process, with or without kcp's in-tree mounts
// controller.
type kcpServer struct {
	*framework.Server
}

// startKCP starts kcp in rootDir, which it creates, logging to logPath if set
// and to kcp.log in rootDir otherwise. inTree turns kcp's in-tree mounts
// controller on (the WorkspaceMounts feature gate); kcp accepts mounted
// Workspaces without it.
func startKCP(ctx context.Context, logPath, rootDir string, inTree bool) (*kcpServer, error) {
	opts := framework.Options{RootDir: rootDir, LogPath: logPath}
	if inTree {
		opts.FeatureGates = "WorkspaceMounts=true"
	}
	s, err := framework.Start(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("starting kcp: %w", err)
	}
	return &kcpServer{Server: s}, nil
}

// logPath returns the file kcp logs to.
func (k *kcpServer) logPath() string {
	return k.LogPath
}

// stop stops kcp.
func (k *kcpServer) stop() error {
	if err := k.Stop(); err != nil {
		return fmt.Errorf("stopping kcp: %w", err)
	}
	return nil
}
