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
// Package layout holds the test of the module's import rules: the layout
// shows the architecture. server/ is the composition root (with cmd/, the
// program); it wires the parts, controllers/ (the controller, cleanup) and
// virtual/ (the virtual workspace), which share the leaves under pkg/. Every
// import runs one way: cmd -> server -> parts -> leaves.
package layout
