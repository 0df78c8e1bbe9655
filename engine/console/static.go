package console

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

// Caching the embedded files. They change only with the binary, so each
// build serves them under a prefix named by a hash of them all,
// /console/static/<hash>/assets/… and …/vendor/…, with Cache-Control
// immutable: a browser that has them loads a page without asking for
// them again (and Chromium keeps the compiled code of cached scripts). A
// new binary has a new prefix, so a page never mixes versions; a request
// for another build's prefix is 404. The modules import each other by
// relative URLs, so they all resolve under the same prefix.
//
// The unprefixed /console/assets/… and /console/vendor/… paths stay (for
// links and tools): each answers with an ETag, the file's hash, and
// no-cache, so a browser revalidates and gets 304 while it is current.

// shellFile is the page template, served only as the shell.
const shellFile = "assets/index.html"

// static holds the embedded tree with a hash per file and one for all.
type static struct {
	fsys   fs.FS
	etags  map[string]string // path in fsys → quoted hash
	prefix string            // /console/static/<hash>
}

func newStatic(fsys fs.FS) *static {
	s := &static{fsys: fsys, etags: map[string]string{}}
	all := sha256.New()
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || p == shellFile {
			return err
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		s.etags[p] = `"` + hex.EncodeToString(sum[:12]) + `"`
		all.Write([]byte(p + "\x00"))
		all.Write(sum[:])
		return nil
	})
	if err != nil {
		panic("console: reading the embedded files: " + err.Error())
	}
	s.prefix = "/console/static/" + hex.EncodeToString(all.Sum(nil)[:8])
	return s
}

// serve answers a file of the tree at name ("assets/app.js") with the
// given Cache-Control; a directory or a missing file is 404.
func (s *static) serve(w http.ResponseWriter, r *http.Request, name, cacheControl string) {
	name = path.Clean(name)
	etag, ok := s.etags[name]
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Cache-Control", cacheControl)
	w.Header().Set("ETag", etag)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	http.ServeFileFS(w, r, s.fsys, name)
}

// versioned serves /console/static/<hash>/<name>: immutable for this
// build's hash, 404 for any other.
func (s *static) versioned(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, s.prefix+"/")
	if !ok {
		http.NotFound(w, r)
		return
	}
	s.serve(w, r, rest, "public, max-age=31536000, immutable")
}

// revalidated serves the unprefixed paths: the file under dir, no-cache
// with its ETag.
func (s *static) revalidated(dir string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rest, _ := strings.CutPrefix(r.URL.Path, "/console/"+dir+"/")
		s.serve(w, r, dir+"/"+rest, "no-cache")
	})
}

// The shell: one HTML page for every route, with the build's prefix, and
// in its head what the route's page needs fetched at once: the modules it
// will import (modulepreload, fetched in parallel instead of one after
// the other) and, on the diagram pages, the viewer (preload, so its
// download runs while the page fetches its data) and the viewer's styles.
// The other pages never load the viewer.

// pageModules are the modules each page imports, besides app.js.
var pageModules = map[string][]string{
	"overview":  {"pages/overview.js"},
	"process":   {"pages/process.js", "diagram.js"},
	"instances": {"pages/instances.js"},
	"instance":  {"pages/instance.js", "diagram.js", "pages/incidents.js"},
	"incidents": {"pages/incidents.js"},
	"tasks":     {"pages/tasks.js", "form.js"},
}

// viewerPages draw a diagram.
var viewerPages = map[string]bool{"process": true, "instance": true}

func (s *static) shell(template []byte, page string) []byte {
	var head strings.Builder
	if viewerPages[page] {
		head.WriteString(`<link rel="stylesheet" href="{{static}}/vendor/diagram-js.css">` + "\n")
		head.WriteString(`<link rel="stylesheet" href="{{static}}/vendor/bpmn-js.css">` + "\n")
		head.WriteString(`<link rel="preload" as="script" href="{{static}}/vendor/bpmn-viewer.production.min.js">` + "\n")
	}
	head.WriteString(`<link rel="modulepreload" href="{{static}}/assets/app.js">` + "\n")
	for _, m := range pageModules[page] {
		head.WriteString(`<link rel="modulepreload" href="{{static}}/assets/` + m + `">` + "\n")
	}
	out := strings.Replace(string(template), "{{head}}", head.String(), 1)
	return []byte(strings.ReplaceAll(out, "{{static}}", s.prefix))
}
