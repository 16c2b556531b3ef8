package monitor

import (
	"embed"
	"io/fs"
	"net/http"
)

// web holds the status page: index.html, its script and its style sheet,
// all in the binary (no external scripts, fonts or CDNs). The script
// polls api/status every second and draws a run, or a sweep's grid,
// from it.
//
//go:embed web/index.html web/app.js web/style.css
var web embed.FS

// handlePage serves the status page at / and its files at /static/.
func handlePage(mux *http.ServeMux) {
	static, err := fs.Sub(web, "web")
	if err != nil {
		panic(err) // web is embedded: it is there
	}
	index, err := fs.ReadFile(static, "index.html")
	if err != nil {
		panic(err)
	}
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		w.Write(index)
	})
	files := http.StripPrefix("/static/", http.FileServerFS(static))
	mux.Handle("GET /static/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A newer master may serve a newer script on the same port.
		w.Header().Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	}))
}
