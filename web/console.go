// Package web is ejserver's web console: plain HTML, CSS and JavaScript embedded in the binary, served at / by
// every peer. It is a client of the REST API like any other (it calls /api/v1 with the token the operator
// signs in with, kept in the browser's sessionStorage only), so it needs no build step, no CDN and nothing
// else to install.
//
// The console uses hash routes (/#/jobs/settle), so the server only ever serves the few files in static/.
// Every answer carries a strict Content-Security-Policy: scripts, styles and requests only from this origin,
// no inline script or style, no framing.
package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed static
var static embed.FS

// ContentSecurityPolicy is sent with every console file: nothing but this origin, nothing inline.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; font-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// contentTypes are the console's file types, fixed here rather than read from the machine's mime.types.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
	".txt":  "text/plain; charset=utf-8", // the vendored libraries' licences
}

type file struct {
	body        []byte
	contentType string
	etag        string
}

// Handler serves the console: / is index.html, the other files by name. Files are revalidated on every load
// (Cache-Control: no-cache with a content ETag), so a peer upgraded to a new console is picked up at once
// while an unchanged one costs a 304.
func Handler() http.Handler {
	files := map[string]file{}
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := static.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		ct, ok := contentTypes[path.Ext(p)]
		if !ok {
			return fmt.Errorf("%s: no content type for its extension", p)
		}
		files["/"+strings.TrimPrefix(p, "static/")] = file{body: b, contentType: ct, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		return nil
	})
	if err != nil { // the files are embedded: this can't happen in a built binary
		panic("web: read embedded console: " + err.Error())
	}
	files["/"] = files["/index.html"]
	files["/favicon.ico"] = files["/favicon.svg"]
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", ContentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		f, ok := files[r.URL.Path]
		if !ok {
			h.Set("Cache-Control", "no-store")
			http.Error(w, "not found: the console lives at /", http.StatusNotFound)
			return
		}
		h.Set("Content-Type", f.contentType)
		h.Set("Cache-Control", "no-cache")
		h.Set("ETag", f.etag)
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(f.body))
	})
}
