package dbn

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/pipedbn/pipedbn/monitor"
	"github.com/pipedbn/pipedbn/pipeline"
)

// progress shows every RBM's training as it goes: a display redrawn in place
// on a terminal, or a log line per RBM every logEvery otherwise. Epoch ends
// are always logged.
type progress struct {
	w        io.Writer
	tty      bool
	log      hclog.Logger
	batches  []int // mini-batches per epoch of each RBM
	settle   []int // mini-batches each RBM trains in the settle phase
	epochs   int
	mu       sync.Mutex
	stats    []pipeline.Stats
	changed  []bool
	lines    int
	quit     chan struct{}
	wg       sync.WaitGroup
	stopOnce sync.Once
	// mon, if set, sees every report too.
	mon *monitor.Run
	// probe, if set, keeps snapshots of the RBMs (pretrain.probe).
	probe *probe
	// phases, if set, times the phases of a pipelined run.
	phases *phaseClock
}

const (
	redrawEvery = 250 * time.Millisecond
	logEvery    = 10 * time.Second
)

func newProgress(w io.Writer, tty bool, log hclog.Logger, cfgs []pipeline.StageConfig, n int) *progress {
	p := &progress{w: w, tty: tty && w != nil, log: log, quit: make(chan struct{}),
		stats: make([]pipeline.Stats, len(cfgs)), changed: make([]bool, len(cfgs))}
	for i, c := range cfgs {
		p.batches = append(p.batches, pipeline.BatchesPerEpoch(n, c.BatchSize))
		p.settle = append(p.settle, c.Batches(n)-c.Epochs*pipeline.BatchesPerEpoch(n, c.BatchSize))
		p.epochs = c.Epochs
		p.stats[i].Index = c.Index
	}
	every := logEvery
	if p.tty {
		every = redrawEvery
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-p.quit:
				return
			case <-t.C:
				p.show()
			}
		}
	}()
	return p
}

func (p *progress) hooks() pipeline.Hooks {
	h := pipeline.Hooks{
		Window: func(s pipeline.Stats) {
			p.mon.Observe(s)
			p.probe.window(s)
			p.mu.Lock()
			p.stats[s.Index-1] = s
			p.changed[s.Index-1] = true
			p.mu.Unlock()
		},
		Epoch: func(s pipeline.Stats) {
			p.mon.Observe(s)
			p.mu.Lock()
			p.stats[s.Index-1] = s
			p.mu.Unlock()
			epoch := fmt.Sprintf("%d/%d", len(s.Recon), p.epochs)
			if len(s.Recon) > p.epochs {
				epoch = "settle phase"
			}
			p.log.Info("epoch done", "rbm", s.Index, "epoch", epoch,
				"recon_error", s.Recon[len(s.Recon)-1], "samples_per_sec", int(rate(s)))
		},
	}
	if p.probe != nil {
		h.Trained = p.probe.trained
	}
	return h
}

// checkpointed returns the master's Checkpointed hook: fn, then the
// monitor's and the probe's.
func (p *progress) checkpointed(fn func(int, pipeline.StageState)) func(int, pipeline.StageState) {
	return func(rbm int, st pipeline.StageState) {
		fn(rbm, st)
		p.mon.Checkpointed(rbm, st)
		p.probe.checkpointed(rbm, st)
	}
}

// lost shows RBM i's slave as lost until its replacement reports.
func (p *progress) lost(i int) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.stats[i-1].State = pipeline.Lost
	p.changed[i-1] = true
	p.mu.Unlock()
}

func rate(s pipeline.Stats) float64 {
	if s.Busy <= 0 {
		return 0
	}
	return float64(s.Rows) / s.Busy.Seconds()
}

// line renders one RBM's state.
func (p *progress) line(i int) string {
	s := p.stats[i]
	who := ""
	if s.Worker != "" {
		who = " on " + s.Worker
	}
	if s.Batches == 0 {
		state := s.State.String()
		if s.State == pipeline.Idle {
			state = "waiting to start (slaves join, first window arrives)"
		}
		return fmt.Sprintf("RBM %d%s  %s", s.Index, who, state)
	}
	inEpoch := s.Batches - s.Epoch*p.batches[i]
	rejected := ""
	if s.Rejected > 0 {
		rejected = fmt.Sprintf("  rejected %d", s.Rejected)
	}
	epoch := fmt.Sprintf("epoch %d/%d  batch %d/%d", s.Epoch+1, p.epochs, inEpoch, p.batches[i])
	if s.Epoch >= p.epochs {
		epoch = fmt.Sprintf("settle  batch %d/%d", s.Batches-p.epochs*p.batches[i], p.settle[i])
	}
	return fmt.Sprintf("RBM %d%s  %s  recon %.5f  %s samples/s  busy %.0fs  waiting %.0fs%s  %s",
		s.Index, who, epoch, s.LastRecon, thousands(int(rate(s))),
		s.Busy.Seconds(), (s.WaitInput + s.WaitCredit).Seconds(), rejected, s.State)
}

func (p *progress) show() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty {
		var b strings.Builder
		if p.lines > 0 {
			fmt.Fprintf(&b, "\x1b[%dA", p.lines)
		}
		for i := range p.stats {
			b.WriteString("\r\x1b[2K")
			b.WriteString(p.line(i))
			b.WriteByte('\n')
		}
		p.lines = len(p.stats)
		io.WriteString(p.w, b.String())
		return
	}
	for i := range p.stats {
		if p.changed[i] {
			p.log.Info("progress " + p.line(i))
			p.changed[i] = false
		}
	}
}

// stop ends the display, leaving the last frame on a terminal.
func (p *progress) stop() {
	p.stopOnce.Do(func() {
		close(p.quit)
		p.wg.Wait()
		if p.tty {
			p.show()
		}
	})
}

func thousands(n int) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
