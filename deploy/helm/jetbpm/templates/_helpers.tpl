{{/* The chart's names and labels. */}}
{{- define "jetbpm.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "jetbpm.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "jetbpm.labels" -}}
{{ include "jetbpm.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "jetbpm.credsSecret" -}}
{{- if .Values.nats.existingSecret -}}
{{- .Values.nats.existingSecret -}}
{{- else if .Values.nats.credentials -}}
{{- printf "%s-nats" (include "jetbpm.fullname" .) -}}
{{- end -}}
{{- end -}}
