package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"

	"github.com/jetbpm/jetbpm/engine/api"
)

// maxDeployFiles bounds the files of one multipart deploy.
const maxDeployFiles = 100

// serveDeploy takes BPMN documents three ways: multipart/form-data (each
// part with a file name is a document, as curl -F file=@order.bpmn and
// Camunda Modeler send them), JSON {"files": [{"name", "xml"}]} (the
// engine API's request), or any other body as one raw document, named by
// ?name=.
func (s *Server) serveDeploy(w http.ResponseWriter, r *http.Request, rt *route) {
	req, err := s.deployRequest(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	body, err := json.Marshal(req)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	res, err := s.do(r.Context(), rt.op, body)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func (s *Server) deployRequest(r *http.Request) (api.DeployRequest, error) {
	var req api.DeployRequest
	ct := r.Header.Get("Content-Type")
	media, params, _ := mime.ParseMediaType(ct)
	q := r.URL.Query()
	for name := range q {
		if name != "name" || media == "multipart/form-data" || media == "application/json" {
			return req, badRequestf("query parameter %q: a deploy takes only name=, with a raw XML body", name)
		}
	}
	switch media {
	case "multipart/form-data":
		files, err := s.multipartFiles(r, params["boundary"])
		if err != nil {
			return req, err
		}
		req.Files = files
	case "application/json":
		body, err := readBody(r, s.maxDeployBody)
		if err != nil {
			return req, err
		}
		fields, err := decodeObject(body)
		if err != nil {
			return req, err
		}
		if err := checkFields(&route{in: typeOf[api.DeployRequest]()}, fields); err != nil {
			return req, err
		}
		_ = json.Unmarshal(body, &req) // checked above
	default:
		body, err := readBody(r, s.maxDeployBody)
		if err != nil {
			return req, err
		}
		name := q.Get("name")
		if name == "" {
			name = "the request body"
		}
		req.Files = []api.File{{Name: name, XML: string(body)}}
	}
	if len(req.Files) == 0 {
		return req, badRequestf("no BPMN documents: send multipart/form-data files, a raw XML body, or JSON {\"files\": [{\"name\", \"xml\"}]}")
	}
	return req, nil
}

// multipartFiles reads the documents of a multipart body: every part with
// a file name. Parts without one are form fields (Camunda Modeler sends
// deployment-name and the like) and are skipped.
func (s *Server) multipartFiles(r *http.Request, boundary string) ([]api.File, error) {
	if boundary == "" {
		return nil, badRequestf("multipart/form-data without a boundary")
	}
	body := http.MaxBytesReader(nil, r.Body, s.maxDeployBody)
	mr := multipart.NewReader(body, boundary)
	var files []api.File
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return files, nil
		}
		if err != nil {
			return nil, multipartError(err, s.maxDeployBody)
		}
		name := part.FileName()
		if name == "" {
			_, err := io.Copy(io.Discard, part)
			if err != nil {
				return nil, multipartError(err, s.maxDeployBody)
			}
			continue
		}
		if len(files) == maxDeployFiles {
			return nil, &requestError{class: tooLarge, detail: fmt.Sprintf("more than %d files in one deploy", maxDeployFiles)}
		}
		var b strings.Builder
		if _, err := io.Copy(&b, part); err != nil {
			return nil, multipartError(err, s.maxDeployBody)
		}
		files = append(files, api.File{Name: name, XML: b.String()})
	}
}

func multipartError(err error, limit int64) error {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return &requestError{class: tooLarge, detail: fmt.Sprintf("the request body is over %d bytes", limit)}
	}
	return badRequestf("multipart body: %v", err)
}

// serveXML answers with the BPMN document of a process version.
func (s *Server) serveXML(w http.ResponseWriter, r *http.Request, rt *route) {
	body, err := s.buildRequest(rt, r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	res, err := s.do(r.Context(), rt.op, body)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	pr, ok := res.(api.ProcessResponse)
	if !ok {
		s.fail(w, r, fmt.Errorf("process.get answered %T", res))
		return
	}
	w.Header().Set("Content-Type", "application/xml; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if pr.LaidOut {
		w.Header().Set("X-Jetbpm-Laid-Out", "true")
	}
	io.WriteString(w, pr.XML)
}
