//go:build ignore

// gen writes the JSON schemas kubeconform checks the chart's rendered
// objects against (TestHelmChart), as kubeconform's own standalone-strict
// schemas are made (yannh/kubernetes-json-schema), from sources the Go
// module proxy serves — this machine cannot reach GitHub:
//
//   - Kubernetes v1.31.0's OpenAPI v2 document (module k8s.io/kubernetes,
//     api/openapi-spec/swagger.json; Apache-2.0, LICENSE-kubernetes) for
//     Deployment, Service, ConfigMap and Secret;
//   - prometheus-operator v0.85.0's ServiceMonitor CRD (module
//     github.com/prometheus-operator/prometheus-operator,
//     example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml;
//     Apache-2.0, LICENSE-prometheus-operator).
//
// Each schema is standalone (the definitions it needs travel with it) and
// strict (an object with named properties allows no others). As in
// kubeconform's schemas, an optional field may be null, an int-or-string
// is either and a quantity a string or a number, and apiVersion and kind
// must name the resource. Run from this directory:
//
//	go run gen.go
package main

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

const (
	proxy      = "https://proxy.golang.org"
	kubernetes = "k8s.io/kubernetes/@v/v1.31.0.zip"
	swagger    = "k8s.io/kubernetes@v1.31.0/api/openapi-spec/swagger.json"
	kubeLicese = "k8s.io/kubernetes@v1.31.0/LICENSE"
	operator   = "github.com/prometheus-operator/prometheus-operator/@v/v0.85.0.zip"
	crd        = "github.com/prometheus-operator/prometheus-operator@v0.85.0/example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml"
	opLicense  = "github.com/prometheus-operator/prometheus-operator@v0.85.0/LICENSE"
)

// kinds are the Kubernetes resources the chart renders: file name,
// definition, apiVersion, kind.
var kinds = [][4]string{
	{"deployment-apps-v1", "io.k8s.api.apps.v1.Deployment", "apps/v1", "Deployment"},
	{"service-v1", "io.k8s.api.core.v1.Service", "v1", "Service"},
	{"configmap-v1", "io.k8s.api.core.v1.ConfigMap", "v1", "ConfigMap"},
	{"secret-v1", "io.k8s.api.core.v1.Secret", "v1", "Secret"},
}

func main() {
	k8s := files(kubernetes, swagger, kubeLicese)
	var doc struct {
		Definitions map[string]map[string]any `json:"definitions"`
	}
	if err := json.Unmarshal(k8s[swagger], &doc); err != nil {
		log.Fatal(err)
	}
	doc.Definitions["io.k8s.apimachinery.pkg.util.intstr.IntOrString"] = map[string]any{
		"oneOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "integer"}}}
	doc.Definitions["io.k8s.apimachinery.pkg.api.resource.Quantity"] = map[string]any{
		"oneOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "number"}}}
	for _, k := range kinds {
		defs := map[string]any{}
		closure(doc.Definitions, k[1], defs)
		root := map[string]any{}
		for key, v := range doc.Definitions[k[1]] {
			root[key] = v
		}
		root = strict(root).(map[string]any)
		props := root["properties"].(map[string]any)
		props["apiVersion"] = map[string]any{"type": "string", "enum": []any{k[2]}}
		props["kind"] = map[string]any{"type": "string", "enum": []any{k[3]}}
		for name, d := range defs {
			defs[name] = strict(d)
		}
		root["definitions"] = defs
		write(k[0]+".json", root)
	}
	write("LICENSE-kubernetes", k8s[kubeLicese])

	op := files(operator, crd, opLicense)
	var c struct {
		Spec struct {
			Versions []struct {
				Name   string `yaml:"name"`
				Schema struct {
					OpenAPIV3Schema map[string]any `yaml:"openAPIV3Schema"`
				} `yaml:"schema"`
			} `yaml:"versions"`
		} `yaml:"spec"`
	}
	if err := yaml.Unmarshal(op[crd], &c); err != nil {
		log.Fatal(err)
	}
	for _, v := range c.Spec.Versions {
		if v.Name == "v1" {
			write("servicemonitor-monitoring-v1.json", strict(v.Schema.OpenAPIV3Schema))
		}
	}
	write("LICENSE-prometheus-operator", op[opLicense])
}

// files fetches a module's zip from the proxy and returns the named files.
func files(module string, names ...string) map[string][]byte {
	resp, err := http.Get(proxy + "/" + module)
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		log.Fatalf("%s: %s %v", module, resp.Status, err)
	}
	z, err := zip.NewReader(bytes.NewReader(body), int64(len(body)))
	if err != nil {
		log.Fatal(err)
	}
	out := map[string][]byte{}
	for _, f := range z.File {
		if slices.Contains(names, f.Name) {
			r, err := f.Open()
			if err != nil {
				log.Fatal(err)
			}
			out[f.Name], _ = io.ReadAll(r)
			r.Close()
		}
	}
	for _, n := range names {
		if out[n] == nil {
			log.Fatalf("%s: no %s", module, n)
		}
	}
	return out
}

// closure adds definition name and every definition it refers to.
func closure(all map[string]map[string]any, name string, into map[string]any) {
	if _, ok := into[name]; ok {
		return
	}
	d, ok := all[name]
	if !ok {
		log.Fatalf("no definition %s", name)
	}
	into[name] = d
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok {
				closure(all, strings.TrimPrefix(ref, "#/definitions/"), into)
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(d)
}

// strict returns a copy of schema v in which every object with named
// properties allows no others (unless it says it keeps unknown fields),
// and every optional property that has a type may also be null.
func strict(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, x := range v {
			if k == "properties" {
				continue
			}
			out[k] = strict(x)
		}
		if props, ok := v["properties"].(map[string]any); ok {
			required := map[string]bool{}
			if r, ok := v["required"].([]any); ok {
				for _, n := range r {
					required[fmt.Sprint(n)] = true
				}
			}
			np := map[string]any{}
			for name, p := range props {
				p := strict(p)
				if m, ok := p.(map[string]any); ok && !required[name] {
					if t, ok := m["type"].(string); ok {
						m["type"] = []any{t, "null"}
					}
				}
				np[name] = p
			}
			out["properties"] = np
			if _, set := v["additionalProperties"]; !set && v["x-kubernetes-preserve-unknown-fields"] != true {
				out["additionalProperties"] = false
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = strict(x)
		}
		return out
	}
	return v
}

func write(name string, v any) {
	data, ok := v.([]byte)
	if !ok {
		var err error
		if data, err = json.MarshalIndent(v, "", " "); err != nil {
			log.Fatal(err)
		}
		data = append(data, '\n')
	}
	if err := os.WriteFile(name, data, 0o644); err != nil {
		log.Fatal(err)
	}
}
