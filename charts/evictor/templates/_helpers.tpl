{{/* The chart's name: app.kubernetes.io/name of every object. */}}
{{- define "evictor.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The prefix of every object's name: the release's name when it contains the
chart's ("evictor" for `helm install evictor`, as in manifests/), else
"<release>-<chart>".
*/}}
{{- define "evictor.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := include "evictor.name" . }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The labels of every object: manifests/kustomization.yaml's two, and Helm's
own (tests/helm_chart_test.ts allows exactly these four more).
*/}}
{{- define "evictor.labels" -}}
app.kubernetes.io/name: {{ include "evictor.name" . }}
app.kubernetes.io/part-of: evictor
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The manager's pods: the Deployment's selector, the Services', the PDB's. */}}
{{- define "evictor.selectorLabels" -}}
app.kubernetes.io/name: {{ include "evictor.name" . }}
app.kubernetes.io/component: manager
{{- end }}

{{- define "evictor.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "evictor.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name: with serviceAccount.create=false, name the existing ServiceAccount evictor runs as" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The Lease of leader election (--leader-election-id; the binary's default is "evictor"). */}}
{{- define "evictor.leaseName" -}}
{{- default (include "evictor.fullname" .) .Values.leaderElection.id }}
{{- end }}

{{- define "evictor.webhookServiceName" -}}
{{- printf "%s-webhook" (include "evictor.fullname" .) }}
{{- end }}

{{/* The Service in front of /metrics (HTTPS, the webhook's certificate). */}}
{{- define "evictor.metricsServiceName" -}}
{{- printf "%s-metrics" (include "evictor.fullname" .) }}
{{- end }}

{{/* The Secret with the webhook's serving certificate (and /metrics'). */}}
{{- define "evictor.webhookCertSecretName" -}}
{{- if .Values.certManager.enabled }}
{{- printf "%s-webhook-tls" (include "evictor.fullname" .) }}
{{- else }}
{{- .Values.webhook.certSecretName }}
{{- end }}
{{- end }}

{{- define "evictor.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (toString .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* One webhook's clientConfig: the webhook Service, a path, the CA when cert-manager does not inject it. */}}
{{- define "evictor.webhookClientConfig" -}}
service:
  name: {{ include "evictor.webhookServiceName" .root }}
  namespace: {{ .root.Release.Namespace }}
  path: {{ .path }}
  port: 443
{{- with .caBundle }}
caBundle: {{ . }}
{{- end }}
{{- end }}

{{/*
What the schema cannot say, checked in one order (each template that
depends on it includes this, and Helm stops at the first failure).
*/}}
{{- define "evictor.checkValues" -}}
{{- $ports := list (int .Values.metrics.port) (int .Values.health.port) (int .Values.webhook.port) }}
{{- if ne (len (uniq $ports)) 3 }}
{{- fail (printf "metrics.port=%v, health.port=%v and webhook.port=%v must differ: each is its own listener in the pod" .Values.metrics.port .Values.health.port .Values.webhook.port) }}
{{- end }}
{{- if and (gt (int .Values.replicas) 1) (not .Values.leaderElection.enabled) }}
{{- fail (printf "replicas=%v needs leaderElection.enabled=true: without a Lease every replica would drain the same hosts (or set replicas=1)" .Values.replicas) }}
{{- end }}
{{- if not .Values.certManager.enabled }}
{{- if not .Values.webhook.certSecretName }}
{{- fail "webhook.certSecretName: with certManager.enabled=false, name a kubernetes.io/tls Secret (tls.crt, tls.key) for the webhook" }}
{{- end }}
{{- if not .Values.webhook.caBundle }}
{{- fail "webhook.caBundle: with certManager.enabled=false, give the base64 PEM of the CA that signed webhook.certSecretName's certificate" }}
{{- end }}
{{- end }}
{{- end }}
