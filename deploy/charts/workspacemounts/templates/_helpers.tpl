{{/* The chart name. */}}
{{- define "workspacemounts.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The full name: the release name when it contains the chart name. */}}
{{- define "workspacemounts.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "workspacemounts.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "workspacemounts.selectorLabels" -}}
app.kubernetes.io/name: {{ include "workspacemounts.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "workspacemounts.labels" -}}
helm.sh/chart: {{ include "workspacemounts.chart" . }}
{{ include "workspacemounts.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "workspacemounts.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "workspacemounts.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* repository:tag, or repository@digest. */}}
{{- define "workspacemounts.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* Fails on values that cannot work together. */}}
{{- define "workspacemounts.validate" -}}
{{- $single := .Values.kcp.kubeconfig.secretName }}
{{- $sharded := .Values.kcp.sharded.enabled }}
{{- if and $single $sharded }}
{{- fail "kcp.kubeconfig.secretName (one shard) and kcp.sharded.enabled (a sharded kcp) exclude each other: set kcp.kubeconfig.secretName=\"\" with kcp.sharded.enabled" }}
{{- end }}
{{- if and .Values.kcp.kubeconfig.allShards $sharded }}
{{- fail "kcp.kubeconfig.allShards serves every shard with kcp.kubeconfig; kcp.sharded does so with two kubeconfigs: use one or the other" }}
{{- end }}
{{- if not (or $single $sharded) }}
{{- fail "set kcp.kubeconfig.secretName (one shard) or kcp.sharded.enabled (a sharded kcp)" }}
{{- end }}
{{- if and $sharded (not (and .Values.kcp.sharded.rootKubeconfig.secretName .Values.kcp.sharded.shardsKubeconfig.secretName)) }}
{{- fail "kcp.sharded needs rootKubeconfig.secretName and shardsKubeconfig.secretName" }}
{{- end }}
{{- if and .Values.levels.workspaceURL (not .Values.levels.workspaceCondition) }}
{{- fail "levels.workspaceURL needs levels.workspaceCondition (level 3 is level 2 and spec.URL): without it a mount whose kind is not served, or whose URL is not routable, keeps its last URL and takes traffic" }}
{{- end }}
{{- if and (or .Values.levels.workspaceURLAllowedHosts .Values.levels.workspaceURLAllowInternalHosts) (not .Values.levels.workspaceURL) }}
{{- fail "levels.workspaceURLAllowedHosts and levels.workspaceURLAllowInternalHosts apply with levels.workspaceURL only" }}
{{- end }}
{{- if and .Values.requestheader.caConfigMap (empty .Values.requestheader.allowedNames) }}
{{- fail "requestheader.allowedNames is required with requestheader.caConfigMap: the CN of the front-proxy's proxy_client_cert" }}
{{- end }}
{{- if not (has .Values.logging.format (list "text" "json")) }}
{{- fail "logging.format is text or json" }}
{{- end }}
{{- end }}

{{/* A volume of one Secret key: dict name, secret, key, path. */}}
{{- define "workspacemounts.secretVolume" -}}
- name: {{ .name }}
  secret:
    secretName: {{ .secret }}
    defaultMode: 0440
    items:
      - key: {{ .key }}
        path: {{ .path }}
{{- end }}
