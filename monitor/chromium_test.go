package monitor_test

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pipedbn/pipedbn/monitor"
	"github.com/pipedbn/pipedbn/pipeline"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
)

// ScreenshotEnv names a PNG file TestChromiumShowsRun writes its laptop
// screenshot to (and the phone one beside it, -phone before .png): how
// docs/monitor.png is made.
const ScreenshotEnv = "PIPEDBN_SCREENSHOT"

// chromium returns the path of a Chromium on PATH, or skips the test.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no chromium on PATH: `make deps` installs Debian's chromium (apt-get install chromium)")
	return ""
}

// headless runs the Chromium bin headless on url with args, after the
// page's script ran for 4 s of virtual time (several polls of
// /api/status), and returns its standard output and what the page wrote
// on its console (errors of its script among them).
func headless(t *testing.T, bin, url string, args ...string) (stdout []byte, console string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args = append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--no-first-run", "--no-default-browser-check", "--hide-scrollbars", "--mute-audio",
		"--user-data-dir=" + t.TempDir(), "--virtual-time-budget=4000", "--enable-logging=stderr"}, args...)
	cmd := exec.CommandContext(ctx, bin, append(args, url)...)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, stderr.String())
	}
	var lines []string
	for _, l := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(l, ":CONSOLE") {
			lines = append(lines, l)
		}
	}
	return out.Bytes(), strings.Join(lines, "\n")
}

var (
	rbmRow    = regexp.MustCompile(`<div class="row rbm" id="rbm-(\d+)" data-state="([a-z_]+)"`)
	curvePts  = regexp.MustCompile(`<polyline class="curve[^"]*" points="[^"]*" data-points="(\d+)"`)
	figureEnd = "</figure>"
	phaseItem = regexp.MustCompile(`<li data-phase="([a-z]+)"(?: class="(current)")?`)
	fact      = regexp.MustCompile(`<div id="(f-[a-z-]+)"><dt>[^<]*</dt><dd class="num">([^<]*)</dd></div>`)
)

// facts returns the facts of a rendered page by their ids.
func facts(dom string) map[string]string {
	fs := map[string]string{}
	for _, m := range fact.FindAllStringSubmatch(dom, -1) {
		fs[m[1]] = m[2]
	}
	return fs
}

// A headless Chromium (Debian's chromium, which `make deps` installs)
// loads the status page of a pipelined run while it trains: the rendered
// DOM has every RBM's row and, for each, a reconstruction-error curve of
// at least 2 points; screenshots at a laptop's and a phone's width decode
// as PNGs of those sizes.
func TestChromiumShowsRun(t *testing.T) {
	bin := chromium(t)
	w, start := startWatched(t, "[256, 192, 128, 64]", 1000)
	start()
	// Wait until every RBM reported an error twice: the page then has
	// curves to draw. For a screenshot worth showing, until every RBM
	// finished 2 epochs too (their dots on the curves).
	epochs := 0
	if os.Getenv(ScreenshotEnv) != "" {
		epochs = 2
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if w.ended() {
			t.Fatalf("the run ended (%v) before every RBM had a curve", w.wait())
		}
		s := status(t, w.url)
		ready := len(s.RBMs) == 3
		for _, r := range s.RBMs {
			ready = ready && len(r.ReconError) >= epochs && len(r.ReconTrace) >= 2
		}
		if ready {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no curve of 2 points (and %d epochs) on every RBM after 60 s: %+v", epochs, s.RBMs)
		}
		time.Sleep(100 * time.Millisecond)
	}

	out, console := headless(t, bin, w.url+"/", "--dump-dom")
	dom := string(out)
	rows := map[int]string{}
	for _, m := range rbmRow.FindAllStringSubmatch(dom, -1) {
		i, _ := strconv.Atoi(m[1])
		rows[i] = m[2]
	}
	for i := 1; i <= 3; i++ {
		state, ok := rows[i]
		if !ok {
			t.Errorf("the rendered page has no row of RBM %d (rows: %v)", i, rows)
			continue
		}
		if state == "idle" || state == "" {
			t.Errorf("RBM %d's row says %q; want what the run reported (training, waiting)", i, state)
		}
		fig := dom[max(0, strings.Index(dom, fmt.Sprintf(`<figure id="recon-%d"`, i))):]
		fig = fig[:strings.Index(fig+figureEnd, figureEnd)]
		m := curvePts.FindStringSubmatch(fig)
		if n, _ := strconv.Atoi(append(m, "", "0")[1]); !strings.HasPrefix(fig, "<figure") || n < 2 {
			t.Errorf("RBM %d's reconstruction-error figure has no curve of 2 points or more: %.600s", i, fig)
		}
	}
	if len(rows) != 3 {
		t.Errorf("the rendered page has rows of RBMs %v; want 1, 2, 3", rows)
	}
	// Every RBM trained windows: the pipeline filled, and the page lists
	// the phases passed, the current one marked.
	var phases []string
	for _, m := range phaseItem.FindAllStringSubmatch(dom, -1) {
		phases = append(phases, strings.TrimSpace(m[1]+" "+m[2]))
	}
	if len(phases) < 4 || !slices.Equal(phases[:3], []string{"calibration", "start", "fill"}) || !strings.HasSuffix(phases[len(phases)-1], " current") {
		t.Errorf("the rendered page lists the phases %q; want calibration, start, fill and more, the last current", phases)
	}
	if e2e, ok := facts(dom)["f-end-to-end"]; ok {
		t.Errorf("the page of a run in pre-training shows the end-to-end seconds %q; want them once the run ended", e2e)
	}
	if t.Failed() {
		t.Fatalf("the page's console:\n%s\nthe rendered DOM:\n%s", console, dom)
	}

	shots := t.TempDir()
	for _, shot := range []struct {
		name   string
		width  int
		height int
	}{{"laptop", 1280, 1000}, {"phone", 412, 1600}} {
		file := filepath.Join(shots, shot.name+".png")
		headless(t, bin, w.url+"/", fmt.Sprintf("--window-size=%d,%d", shot.width, shot.height), "--screenshot="+file)
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("the %s screenshot: %v", shot.name, err)
		}
		img, err := png.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("the %s screenshot %s: %v", shot.name, file, err)
		}
		if sz := img.Bounds().Size(); sz.X != shot.width || sz.Y != shot.height {
			t.Errorf("the %s screenshot is %v; want %dx%d", shot.name, sz, shot.width, shot.height)
		}
		if dst := os.Getenv(ScreenshotEnv); dst != "" {
			if shot.name != "laptop" {
				dst = strings.TrimSuffix(dst, ".png") + "-" + shot.name + ".png"
			}
			if err := os.WriteFile(dst, b, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s screenshot (%dx%d) written to %s", shot.name, shot.width, shot.height, dst)
		}
	}
}

// The page of a finished run, in a headless Chromium, shows the whole
// job's seconds and, in its fine-tuning section, how fine-tuning was laid
// out: the workers, each one's mini-batch, CPU cap and threads, as
// /api/status has them.
func TestChromiumShowsFinishedRun(t *testing.T) {
	bin := chromium(t)
	w, start := startWatched(t, "[16, 8, 4]", 2)
	start()
	if err := w.wait(); err != nil {
		t.Fatal(err)
	}
	s := status(t, w.url)
	if s.Finetuning == nil || s.Finetuning.Plan == nil || s.EndToEndSeconds <= 0 {
		t.Fatalf("status at the end: finetuning %+v, end_to_end_seconds %v; want the plan and the seconds", s.Finetuning, s.EndToEndSeconds)
	}
	p := s.Finetuning.Plan
	out, console := headless(t, bin, w.url+"/", "--dump-dom")
	dom := string(out)
	fs := facts(dom)
	for id, want := range map[string]string{
		"f-ft-workers": "1", "f-ft-batch": strconv.Itoa(p.BatchPerWorker), "f-ft-cpus": "uncapped",
		"f-ft-threads": strconv.Itoa(p.Threads),
	} {
		if fs[id] != want {
			t.Errorf("the fine-tuning plan's %s = %q; want %q (plan %+v)", id, fs[id], want, *p)
		}
	}
	if _, ok := fs["f-ft-sync"]; ok {
		t.Errorf("the page shows an averaging period for one worker, which averages nothing")
	}
	if strings.Contains(dom, `id="ft-workers"`) {
		t.Errorf("the page shows a table of fine-tuning workers for a run the master fine-tuned")
	}
	if !strings.Contains(dom, `<section id="finetune">`) || !strings.Contains(dom[strings.Index(dom, `<section id="finetune">`):], `id="ft-plan"`) {
		t.Errorf("the plan is not in the fine-tuning section")
	}
	if e2e := fs["f-end-to-end"]; !regexp.MustCompile(`^[0-9.]+ s$`).MatchString(e2e) {
		t.Errorf("the end-to-end seconds read %q; want the seconds of %v", e2e, s.EndToEndSeconds)
	}
	if t.Failed() {
		t.Fatalf("the page's console:\n%s\nthe rendered DOM:\n%s", console, dom)
	}
}

var (
	workerRow  = regexp.MustCompile(`<tr class="ft-worker" data-worker="([^"]+)" data-state="([a-z_]+)">(.*?)</tr>`)
	workerCell = regexp.MustCompile(`<td class="num" data-label="([a-z/ -]+)">([^<]*)</td>`)
)

// The page of a run fine-tuning on workers, in a headless Chromium, has a
// table of the workers in its fine-tuning section, a row each by name with
// its state, epoch, mini-batches, loss and samples/s as /api/status has
// them and a busy-vs-waiting bar; a lost worker's row stays, marked lost,
// beside its replacement's.
func TestChromiumShowsFinetuneWorkers(t *testing.T) {
	bin := chromium(t)
	r := monitor.NewRun("ft", "greedy", "")
	r.FineTuning(4)
	report := func(name string, batches int, loss float64, state pipeline.State) {
		r.FinetuneWorker(pipeline.Stats{Index: 1, Worker: name, Epoch: 1, Batches: batches, Rows: 20 * batches,
			Busy: time.Duration(batches) * 100 * time.Millisecond, WaitInput: time.Second, LastRecon: loss, State: state})
	}
	report("local-1-r1", 30, 0.6125, pipeline.Training)
	report("local-1-r0", 28, 0.5875, pipeline.WaitingAverage)
	r.Lost(1, "local-1-r1", 4*time.Second)
	r.Recovered(protocol.Recovery{RBM: 1, Lost: "local-1-r1", Replacement: "spare-1", ResumedAtBatch: 24, LostAtBatch: 30, Redone: 6})
	report("spare-1", 26, 0.625, pipeline.Training)
	srv := httptest.NewServer(r.Handler())
	defer srv.Close()

	out, console := headless(t, bin, srv.URL+"/", "--dump-dom")
	dom := string(out)
	section := dom[max(0, strings.Index(dom, `<section id="finetune">`)):]
	var rows []string
	for _, m := range workerRow.FindAllStringSubmatch(section, -1) {
		cells := []string{m[1], m[2]}
		for _, c := range workerCell.FindAllStringSubmatch(m[3], -1) {
			cells = append(cells, c[1]+" "+c[2])
		}
		if !strings.Contains(m[3], `<div class="bar"`) {
			cells = append(cells, "no bar")
		}
		rows = append(rows, strings.Join(cells, ", "))
	}
	want := []string{
		"local-1-r0, waiting_average, epoch 2 / 4, mini-batches 28, loss 0.5875, samples/s 200",
		"local-1-r1, lost, epoch 2 / 4, mini-batches 30, loss 0.6125, samples/s 200",
		"spare-1, training, epoch 2 / 4, mini-batches 26, loss 0.625, samples/s 200",
	}
	if !slices.Equal(rows, want) {
		t.Errorf("the fine-tuning section's worker rows:\n%s\nwant\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
	if t.Failed() {
		t.Fatalf("the page's console:\n%s\nthe rendered DOM:\n%s", console, dom)
	}
}

// The sweep's page, in a headless Chromium, shows its grid: a row per run
// with its state, a link to the live page of the one running and to the
// result of the one done.
func TestChromiumShowsSweep(t *testing.T) {
	bin := chromium(t)
	dir := t.TempDir()
	sweep := monitor.NewSweep("grid", dir)
	runDir := func(name string) string {
		d := filepath.Join(dir, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	done, running := runDir("k1"), runDir("k2")
	if err := os.WriteFile(filepath.Join(done, "result.json"), []byte(`{"name": "k1"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := monitor.WriteURL(running, "http://127.0.0.1:9/"); err != nil {
		t.Fatal(err)
	}
	sweep.Set(monitor.SweepRun{Index: 1, Name: "k1", Sets: []string{"pretrain.k_batches=1"}, Dir: done,
		ResultFile: filepath.Join(done, "result.json"), State: monitor.RunDone, WallSeconds: 12, TestAccuracy: 0.81})
	sweep.Set(monitor.SweepRun{Index: 2, Name: "k2", Sets: []string{"pretrain.k_batches=2"}, Dir: running, State: monitor.RunRunning})
	sweep.Set(monitor.SweepRun{Index: 3, Name: "k3", Sets: []string{"pretrain.k_batches=4"}, Dir: runDir("k3")})
	ln, err := monitor.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := monitor.Serve(ln, sweep.Handler(), monitor.ServeOptions{})
	defer srv.Close()
	url := monitor.URL(ln)

	out, console := headless(t, bin, url+"/", "--dump-dom")
	dom := string(out)
	for _, want := range []string{
		`<tr id="run-1" data-state="done">`, `<a href="api/runs/1/result">result.json</a>`, "81.00 %",
		`<tr id="run-2" data-state="running">`, `<a href="http://127.0.0.1:9/">live page</a>`,
		`<tr id="run-3" data-state="pending">`, "pretrain.k_batches=4",
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("the sweep's rendered page has no %s", want)
		}
	}
	if t.Failed() {
		t.Fatalf("the page's console:\n%s\nthe rendered DOM:\n%s", console, dom)
	}
	if got := get(t, url+"/api/runs/1/result"); got != `{"name": "k1"}` {
		t.Errorf("GET /api/runs/1/result = %s; want run 1's result.json", got)
	}
}
