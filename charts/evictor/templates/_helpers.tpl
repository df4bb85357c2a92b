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

{{/*
The manager's pods: the Deployment's selector, the Services', the PDB's, the
anti-affinity's. The release's name keeps two releases in one namespace from
selecting each other's pods (a selector is immutable: see docs/deploy.md).
*/}}
{{- define "evictor.selectorLabels" -}}
app.kubernetes.io/name: {{ include "evictor.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: manager
{{- end }}

{{/*
"true" when objects of an API that not every cluster serves are rendered:
the value is true, or "auto" and the cluster serves the API (helm template
knows only the built-in APIs unless told with --api-versions). Called with
(list $ value "group/version").
*/}}
{{- define "evictor.apiWanted" -}}
{{- $root := index . 0 }}
{{- $value := index . 1 }}
{{- if eq (toString $value) "auto" }}
{{- if $root.Capabilities.APIVersions.Has (index . 2) }}true{{ end }}
{{- else if $value }}true{{ end }}
{{- end }}

{{/* "true" when the ServiceMonitor is rendered. */}}
{{- define "evictor.serviceMonitor" -}}
{{- include "evictor.apiWanted" (list . .Values.monitoring.serviceMonitor.enabled "monitoring.coreos.com/v1") }}
{{- end }}

{{/* "true" when the PrometheusRule is rendered. */}}
{{- define "evictor.prometheusRule" -}}
{{- include "evictor.apiWanted" (list . .Values.monitoring.prometheusRule.enabled "monitoring.coreos.com/v1") }}
{{- end }}

{{/*
Where the webhook's serving certificate comes from: "secret" (the user's,
webhook.certSecretName), "cert-manager" (certManager.enabled true, or auto
on a cluster with cert-manager), else "generated" (by the chart, kept in a
Secret across upgrades: webhook/validating_webhook_configuration.yaml).
*/}}
{{- define "evictor.certSource" -}}
{{- if .Values.webhook.certSecretName }}secret
{{- else if include "evictor.apiWanted" (list . .Values.certManager.enabled "cert-manager.io/v1") }}cert-manager
{{- else }}generated
{{- end }}
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
{{- default (printf "%s-webhook-tls" (include "evictor.fullname" .)) .Values.webhook.certSecretName }}
{{- end }}

{{/*
The chart's own certificate for the webhook (certSource "generated"), as
YAML: the Secret's data (ca.crt, tls.crt, tls.key; base64) and the caBundle.
An existing Secret of the release is kept, so upgrades change nothing. When
there is none (first install, or deleted to rotate) a new CA (10 years: no
one renews it) signs a new serving certificate, and the caBundle also keeps
the CAs the webhook configuration trusts now: until the kubelet refreshes
the pods' copy of the Secret (a minute or so) they still serve the old
certificate, and the webhook fails closed. The next upgrade drops them.
Called once per rendering (the Secret and the configuration share a file).
*/}}
{{- define "evictor.generatedTls" -}}
{{- $fullname := include "evictor.fullname" . }}
{{- $secret := lookup "v1" "Secret" .Release.Namespace (include "evictor.webhookCertSecretName" .) }}
{{- $ca := dig "data" "ca.crt" "" $secret }}
{{- $crt := dig "data" "tls.crt" "" $secret }}
{{- $key := dig "data" "tls.key" "" $secret }}
{{- if and $ca $crt $key }}
ca.crt: {{ $ca }}
tls.crt: {{ $crt }}
tls.key: {{ $key }}
caBundle: {{ $ca }}
{{- else }}
{{- $webhook := printf "%s.%s.svc" (include "evictor.webhookServiceName" .) .Release.Namespace }}
{{- $metrics := printf "%s.%s.svc" (include "evictor.metricsServiceName" .) .Release.Namespace }}
{{- $names := list $webhook (printf "%s.cluster.local" $webhook) $metrics (printf "%s.cluster.local" $metrics) }}
{{- $newCa := genCAWithKey (printf "%s-webhook-ca" $fullname) 3650 (genPrivateKey "ecdsa") }}
{{- $cert := genSignedCertWithKey $webhook nil $names 3650 $newCa (genPrivateKey "ecdsa") }}
{{- $config := lookup "admissionregistration.k8s.io/v1" "ValidatingWebhookConfiguration" "" $fullname }}
{{- $trusted := "" }}
{{- range (dig "webhooks" (list) $config) }}
{{- $trusted = dig "clientConfig" "caBundle" $trusted . }}
{{- end }}
ca.crt: {{ $newCa.Cert | b64enc }}
tls.crt: {{ $cert.Cert | b64enc }}
tls.key: {{ $cert.Key | b64enc }}
caBundle: {{ printf "%s%s" $newCa.Cert ($trusted | b64dec) | b64enc }}
{{- end }}
{{- end }}

{{- define "evictor.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (toString (default .Chart.AppVersion .Values.image.tag)) }}
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
{{- if .Values.webhook.certSecretName }}
{{- if eq (toString .Values.certManager.enabled) "true" }}
{{- fail (printf "webhook.certSecretName=%s: with certManager.enabled=true cert-manager writes the webhook's certificate; set certManager.enabled=false (or auto) to use your own Secret" .Values.webhook.certSecretName) }}
{{- end }}
{{- if not .Values.webhook.caBundle }}
{{- fail (printf "webhook.caBundle: with webhook.certSecretName=%s, give the base64 PEM of the CA that signed that Secret's certificate" .Values.webhook.certSecretName) }}
{{- end }}
{{- else if .Values.webhook.caBundle }}
{{- fail "webhook.caBundle: only with webhook.certSecretName (your own certificate); without it cert-manager or the chart makes the certificate and its CA" }}
{{- end }}
{{- end }}

{{/*
The release as "<namespace>/<name>", and the annotation by which the
webhook knows the policy this release created and checked.
*/}}
{{- define "evictor.releaseId" -}}
{{ .Release.Namespace }}/{{ .Release.Name }}
{{- end }}
{{- define "evictor.policyCheckedAnnotation" -}}
evictor.kvm.cloud.sap/checked-by-chart
{{- end }}

{{/*
The webhook's checks of an EvictionPolicy spec (limits/validation.ts) that
values.schema.json cannot make: no trait limit above the default limit, no
trait listed twice. Same messages as the webhook's.
*/}}
{{- define "evictor.checkPolicy" -}}
{{- $spec := .Values.policy.spec }}
{{- $default := int (default 1 $spec.maxConcurrentMigrations) }}
{{- $seen := dict }}
{{- range $i, $t := (default list $spec.traitLimits) }}
{{- if hasKey $seen $t.trait }}
{{- fail (printf "policy.spec.traitLimits[%d].trait: got \"%s\", already listed at traitLimits[%v]; expected each trait once" $i $t.trait (get $seen $t.trait)) }}
{{- end }}
{{- $_ := set $seen $t.trait (toString $i) }}
{{- if gt (int $t.maxConcurrentMigrations) $default }}
{{- fail (printf "policy.spec.traitLimits[%d].maxConcurrentMigrations: got %v for trait %s; expected at most spec.maxConcurrentMigrations %d (a trait lowers the limit, never raises it)" $i $t.maxConcurrentMigrations $t.trait $default) }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The OpenStack credentials Secret must exist before the pods can start: when
Helm talks to a cluster (install, upgrade, --dry-run=server; the release's
namespace is found) and the Secret is not in that namespace, fail at once
instead of letting `helm install --wait` wait for its whole timeout.
`helm template` sees no cluster and checks nothing.
*/}}
{{- define "evictor.checkOpenStackSecret" -}}
{{- if .Values.openstack.requireSecret }}
{{- if lookup "v1" "Namespace" "" .Release.Namespace }}
{{- if not (lookup "v1" "Secret" .Release.Namespace .Values.openstack.secretName) }}
{{- fail (printf "openstack.secretName: the Secret %s/%s with the OpenStack credentials (key clouds.yaml) does not exist, and evictor's pods cannot start without it. Create it first: kubectl -n %s create secret generic %s --from-file=clouds.yaml (docs/deploy.md); or set openstack.requireSecret=false when it is made after the chart's objects" .Release.Namespace .Values.openstack.secretName .Release.Namespace .Values.openstack.secretName) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
