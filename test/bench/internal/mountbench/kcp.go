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
	"errors"
	"fmt"
	"os"

	"github.com/workspacemounts/workspacemounts/test/framework"
)

// kcpServer is a kcp process, with or without kcp's in-tree mounts
// controller, and the log file it writes to if the caller chose one.
type kcpServer struct {
	*framework.Server
	logFile *os.File
}

// startKCP starts kcp in rootDir, which it creates, logging to logPath if set
// and to kcp.log in rootDir otherwise. inTree turns kcp's in-tree mounts
// controller on (the WorkspaceMounts feature gate); kcp accepts mounted
// Workspaces without it.
func startKCP(ctx context.Context, logPath, rootDir string, inTree bool) (*kcpServer, error) {
	opts := framework.Options{RootDir: rootDir}
	if inTree {
		opts.FeatureGates = "WorkspaceMounts=true"
	}
	var logFile *os.File
	if logPath != "" {
		f, err := os.Create(logPath)
		if err != nil {
			return nil, fmt.Errorf("creating kcp's log file: %w", err)
		}
		logFile, opts.LogWriter = f, f
	}
	s, err := framework.Start(ctx, opts)
	if err != nil {
		if logFile != nil {
			err = errors.Join(err, logFile.Close())
		}
		return nil, fmt.Errorf("starting kcp: %w", err)
	}
	return &kcpServer{Server: s, logFile: logFile}, nil
}

// logPath returns the file kcp logs to.
func (k *kcpServer) logPath() string {
	if k.logFile != nil {
		return k.logFile.Name()
	}
	return k.LogPath
}

// stop stops kcp and closes its log file.
func (k *kcpServer) stop() error {
	err := k.Stop()
	if err != nil {
		err = fmt.Errorf("stopping kcp: %w", err)
	}
	if k.logFile != nil {
		err = errors.Join(err, k.logFile.Close())
	}
	return err
}
