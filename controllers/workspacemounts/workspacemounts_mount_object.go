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

package workspacemounts

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kcp-dev/logicalcluster/v3"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
)

// trimFullMountObject is the full-object informers' transform: it keeps of a mount object only what the contract reads
// and what the cache needs, in a [trimmedMountObject].
func trimFullMountObject(obj interface{}) (interface{}, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil // a tombstone, or trimmed already
	}
	t := &trimmedMountObject{cluster: logicalcluster.From(u), marked: mount.IsMarked(u.GetAnnotations())}
	t.Name, t.Namespace, t.UID, t.ResourceVersion = u.GetName(), u.GetNamespace(), u.GetUID(), u.GetResourceVersion()
	switch status := u.Object["status"].(type) {
	case nil:
	case map[string]interface{}:
		t.status = fieldPresent
		if phase, present := status["phase"]; present {
			t.phase = fieldNotString // null too
			if phase, ok := phase.(string); ok {
				// Compared with the four phases, quoted at most 64 bytes long.
				t.phase, t.phaseValue = fieldPresent, mount.Truncate(phase, 2*maxQuotedPhase)
			}
		}
		if rawURL, ok := status["URL"].(string); ok {
			t.url = mount.Truncate(mount.Sanitize(rawURL), mount.MaxURL)
		}
		if t.marked {
			t.conditions = conditionsOf(u) // an unmarked object's are never published
		}
		if h := heartbeatOf(status); h != (heartbeat{}) {
			t.heartbeat = &h
		}
	default:
		t.status = fieldNotObject
	}
	return t, nil
}

// maxQuotedPhase is how much of an unknown phase a message quotes.
const maxQuotedPhase = 64

// fieldState is whether a field of a mount object's status is there, and of the type the contract reads.
type fieldState uint8

const (
	fieldAbsent fieldState = iota
	fieldPresent
	fieldNotString
	fieldNotObject
)

// trimmedMountObject is what a full-object informer keeps of a mount object: ObjectMeta holds only name, namespace, uid
// and resourceVersion, cluster the cluster kcp stored it in (its annotation, for the cache key).
type trimmedMountObject struct {
	metav1.ObjectMeta
	cluster    logicalcluster.Name
	marked     bool
	status     fieldState
	phase      fieldState
	phaseValue string
	// url is status.URL, "" if absent or not a string: the contract reads all three alike.
	url        string
	conditions []mount.Condition
	// heartbeat is nil for an object without any.
	heartbeat *heartbeat
}

// GetAnnotations is the cluster annotation, the one the cache keys and event handlers read, and the mark of a mount
// object if it carries it.
func (t *trimmedMountObject) GetAnnotations() map[string]string {
	annotations := map[string]string{logicalcluster.AnnotationKey: t.cluster.String()}
	if t.marked {
		annotations[mount.IsMountAnnotationKey] = mount.IsMountAnnotationValue
	}
	return annotations
}

// GetObjectKind and DeepCopyObject make it a runtime.Object.
func (t *trimmedMountObject) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

func (t *trimmedMountObject) DeepCopyObject() runtime.Object {
	out := *t
	t.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.conditions = append([]mount.Condition(nil), t.conditions...)
	if t.heartbeat != nil {
		h := *t.heartbeat
		out.heartbeat = &h
	}
	return &out
}

// unstructured rebuilds the mount object as [statusOfMountObject] reads it: the contract answers the same for it as for
// the object kcp served.
func (t *trimmedMountObject) unstructured() *unstructured.Unstructured {
	annotations := map[string]interface{}{}
	for key, value := range t.GetAnnotations() {
		annotations[key] = value
	}
	metadata := map[string]interface{}{"name": t.Name, "annotations": annotations}
	setNonEmpty(metadata, "namespace", t.Namespace)
	setNonEmpty(metadata, "uid", string(t.UID))
	setNonEmpty(metadata, "resourceVersion", t.ResourceVersion)
	obj := &unstructured.Unstructured{Object: map[string]interface{}{"metadata": metadata}}
	switch t.status {
	case fieldNotObject:
		obj.Object["status"] = false
	case fieldPresent:
		status := map[string]interface{}{}
		switch t.phase {
		case fieldPresent:
			status["phase"] = t.phaseValue
		case fieldNotString:
			status["phase"] = false
		}
		if t.url != "" {
			status["URL"] = t.url
		}
		if len(t.conditions) > 0 {
			items := make([]interface{}, 0, len(t.conditions))
			for _, c := range t.conditions {
				item := map[string]interface{}{"type": c.Type}
				setNonEmpty(item, "status", c.Status)
				setNonEmpty(item, "reason", c.Reason)
				setNonEmpty(item, "message", c.Message)
				items = append(items, item)
			}
			status["conditions"] = items
		}
		if t.heartbeat != nil {
			t.heartbeat.restore(status)
		}
		obj.Object["status"] = status
	}
	return obj
}

func setNonEmpty(m map[string]interface{}, key, value string) {
	if value != "" {
		m[key] = value
	}
}
