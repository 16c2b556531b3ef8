package monitor

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A sweep serves the result.json of a run that has one, and 404 for the
// others.
func TestSweepServesResult(t *testing.T) {
	dir := t.TempDir()
	result := filepath.Join(dir, "result.json")
	if err := os.WriteFile(result, []byte(`{"name":"a"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	s := NewSweep("sw", dir)
	s.Set(SweepRun{Index: 1, Name: "a", Dir: dir, ResultFile: result, State: RunDone})
	s.Set(SweepRun{Index: 2, Name: "b", Dir: dir, ResultFile: filepath.Join(dir, "none.json"), State: RunRunning})
	s.Set(SweepRun{Index: 3, Name: "c", Dir: dir})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	for path, want := range map[string]int{
		"/api/runs/1/result": http.StatusOK, "/api/runs/2/result": http.StatusNotFound, "/api/runs/3/result": http.StatusNotFound,
		"/api/runs/4/result": http.StatusNotFound, "/api/runs/0/result": http.StatusNotFound, "/api/runs/x/result": http.StatusNotFound,
		"/api/runs/..%2f..%2fetc/result": http.StatusNotFound,
	} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s: %s; want %d", path, resp.Status, want)
		}
		if want == http.StatusOK && (string(b) != `{"name":"a"}` || resp.Header.Get("Content-Type") != "application/json") {
			t.Errorf("GET %s = %s (%s); want run 1's result.json", path, b, resp.Header.Get("Content-Type"))
		}
	}
}

// Linger waits for an open page to fetch the run's end, and for nobody
// else.
func TestLinger(t *testing.T) {
	r := NewRun("l", "pipelined", "")
	srv := httptest.NewServer(r.Handler())
	defer srv.Close()
	poll := func() {
		t.Helper()
		resp, err := http.Get(srv.URL + "/api/status")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	linger := func() time.Duration {
		start := time.Now()
		r.Linger()
		return time.Since(start)
	}
	if d := linger(); d > 100*time.Millisecond {
		t.Errorf("Linger with no page open took %v; want at once", d)
	}
	poll() // a page is open
	if d := linger(); d > 100*time.Millisecond {
		t.Errorf("Linger before the run ended took %v; want at once", d)
	}
	r.Done()
	go func() {
		time.Sleep(300 * time.Millisecond)
		poll() // the page's next poll: it has the end
	}()
	if d := linger(); d < 250*time.Millisecond || d > lingerLimit-200*time.Millisecond {
		t.Errorf("Linger with a page open took %v; want until its next poll (300 ms)", d)
	}
	if d := linger(); d > 100*time.Millisecond {
		t.Errorf("Linger once the page fetched the end took %v; want at once", d)
	}
	r.mu.Lock()
	r.ended = r.lastPoll.Add(time.Millisecond) // ended after the last poll, ...
	r.lastPoll = r.lastPoll.Add(-openPage)     // ... which is too old: the page was closed
	r.mu.Unlock()
	if d := linger(); d > 100*time.Millisecond {
		t.Errorf("Linger with the page closed took %v; want at once", d)
	}
	r.mu.Lock()
	r.lastPoll = time.Now()
	r.ended = r.lastPoll.Add(time.Millisecond)
	r.mu.Unlock()
	if d := linger(); d < lingerLimit {
		t.Errorf("Linger with a page open that does not poll took %v; want the limit, %v", d, lingerLimit)
	}
}
