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
{{- if and (or .Values.levels.workspaceConditionDelay (ne (toString .Values.levels.maxUnavailable) "")) (not .Values.levels.workspaceCondition) }}
{{- fail "levels.workspaceConditionDelay and levels.maxUnavailable gate the condition of levels.workspaceCondition, and apply with it only" }}
{{- end }}
{{- if hasKey .Values.requestheader "caConfigMap" }}
{{- fail "requestheader.caConfigMap is now requestheader.ca.configMapName (or requestheader.ca.secretName), with requestheader.ca.key" }}
{{- end }}
{{- if hasKey .Values.clientCA "configMap" }}
{{- fail "clientCA.configMap is now clientCA.configMapName (or clientCA.secretName), with clientCA.key" }}
{{- end }}
{{- include "workspacemounts.validateCA" (dict "name" "requestheader.ca" "ca" .Values.requestheader.ca) }}
{{- include "workspacemounts.validateCA" (dict "name" "clientCA" "ca" .Values.clientCA) }}
{{- $requestheader := include "workspacemounts.caName" .Values.requestheader.ca }}
{{- if and .Values.requestheader.dedicatedCA (not $requestheader) }}
{{- fail "requestheader.dedicatedCA needs requestheader.ca (its secretName or configMapName): the CA it trusts" }}
{{- end }}
{{- if and .Values.requestheader.dedicatedCA .Values.requestheader.allowedNames }}
{{- fail "requestheader.dedicatedCA trusts every certificate of requestheader.ca whatever its name: set requestheader.allowedNames=[] with it" }}
{{- end }}
{{- if and $requestheader (not .Values.requestheader.dedicatedCA) (empty .Values.requestheader.allowedNames) }}
{{- fail "requestheader.allowedNames is required with requestheader.ca: the CN of the front-proxy's proxy_client_cert (or, for a CA that signs kcp's proxy certificates only, requestheader.dedicatedCA=true)" }}
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

{{/* The Secret or ConfigMap name of a CA value ({secretName|configMapName, key}); "" for none. */}}
{{- define "workspacemounts.caName" -}}
{{- default .configMapName .secretName }}
{{- end }}

{{/* Fails on a CA value that is not one Secret or one ConfigMap with a key: dict name, ca. */}}
{{- define "workspacemounts.validateCA" -}}
{{- $ca := .ca }}
{{- if not (kindIs "map" $ca) }}
{{- fail (printf "%s is {secretName: ..., key: ...} or {configMapName: ..., key: ...}" .name) }}
{{- end }}
{{- range $k, $_ := $ca }}
{{- if not (has $k (list "secretName" "configMapName" "key")) }}
{{- fail (printf "%s.%s is not a field: %s takes secretName or configMapName, and key" $.name $k $.name) }}
{{- end }}
{{- end }}
{{- if and $ca.secretName $ca.configMapName }}
{{- fail (printf "%s.secretName and %s.configMapName exclude each other: the CA is in a Secret or in a ConfigMap" .name .name) }}
{{- end }}
{{- if and (or $ca.secretName $ca.configMapName) (not $ca.key) }}
{{- fail (printf "%s.key is required: the key of the CA certificate (ca.crt in a ConfigMap of your own; tls.crt in a cert-manager CA Certificate's Secret)" .name) }}
{{- end }}
{{- end }}

{{/* A volume of one CA from a Secret or a ConfigMap, as ca.crt: dict name, ca. */}}
{{- define "workspacemounts.caVolume" -}}
- name: {{ .name }}
  {{- if .ca.secretName }}
  secret:
    secretName: {{ .ca.secretName }}
    defaultMode: 0440
  {{- else }}
  configMap:
    name: {{ .ca.configMapName }}
  {{- end }}
    items:
      - key: {{ .ca.key }}
        path: ca.crt
{{- end }}

{{/*
GOMEMLIMIT: 90% of a memory quantity (limits.memory), in bytes. Takes the
quantities Kubernetes writes for memory: a number with a binary (Ki..Ei) or
decimal (k..E) suffix, or none.
*/}}
{{- define "workspacemounts.goMemLimit" -}}
{{- $q := toString . }}
{{- $number := regexFind "^[0-9]+(\\.[0-9]+)?" $q }}
{{- $suffix := trimPrefix $number $q }}
{{- $units := dict "" 1.0 "k" 1e3 "M" 1e6 "G" 1e9 "T" 1e12 "P" 1e15 "E" 1e18 "Ki" 1024.0 "Mi" 1048576.0 "Gi" 1073741824.0 "Ti" 1099511627776.0 "Pi" 1125899906842624.0 "Ei" 1152921504606846976.0 }}
{{- if or (not $number) (not (hasKey $units $suffix)) }}
{{- fail (printf "resources.limits.memory %q: write it as a number with a suffix of Ki, Mi, Gi, Ti, Pi, Ei, k, M, G, T, P or E (GOMEMLIMIT is 90%% of it)" $q) }}
{{- end }}
{{- printf "%d" (int64 (floor (mulf (float64 $number) (get $units $suffix) 0.9))) }}
{{- end }}
