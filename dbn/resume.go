package dbn

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/pipedbn/pipedbn/config"
	"github.com/pipedbn/pipedbn/internal/atomicfile"
	"github.com/pipedbn/pipedbn/pipeline"
)

// RunStateFile, in a run's output folder, records the pipelined run under
// way there, so that `master run` with the same config and output resumes
// it after an interruption: its pre-training from the checkpoints, or,
// once that is done, its fine-tuning from the start.
const RunStateFile = "run-state.json"

// runState is what RunStateFile holds.
type runState struct {
	RunID      string `json:"run_id"`
	ConfigHash string `json:"config_hash"`
	// State is "pretraining" until the pre-trained weights are collected,
	// then "pretrained", and "done" once the run wrote its results.
	State   string `json:"state"`
	Started string `json:"started"`

	path   string
	Resume bool `json:"-"`
}

// configHash identifies what a run computes: the config less where it was
// read from and where it writes.
func configHash(cfg *config.Config) string {
	c := *cfg
	c.File, c.Output.Dir = "", ""
	b, _ := json.Marshal(c)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// openRunState reads the output folder's run state: an interrupted run of
// the same config is resumed; anything else starts a new run.
func openRunState(out string, cfg *config.Config, log hclog.Logger) (*runState, error) {
	path := filepath.Join(out, RunStateFile)
	hash := configHash(cfg)
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("output.dir = %q: %w", out, err)
	default:
		var old runState
		if err := json.Unmarshal(b, &old); err != nil || old.RunID == "" {
			log.Warn("unreadable run state; starting a new run", "file", path, "error", err)
			break
		}
		if old.State != "pretraining" {
			break
		}
		if old.ConfigHash != hash {
			log.Warn("the output folder holds an interrupted run of another config; starting a new run", "file", path, "run", old.RunID)
			break
		}
		if cfg.Reliability.CheckpointEvery == 0 {
			log.Warn("the output folder holds an interrupted run, but reliability.checkpoint_every = 0 leaves nothing to resume from; starting a new run", "run", old.RunID)
			break
		}
		old.path, old.Resume = path, true
		return &old, nil
	}
	s := &runState{RunID: runID(cfg.Name), ConfigHash: hash, State: "pretraining", Started: time.Now().UTC().Format(time.RFC3339), path: path}
	return s, s.write()
}

func (s *runState) write() error {
	return atomicfile.WriteJSON(s.path, s)
}

// finish records that the run's pre-training is complete.
func (s *runState) finish() error {
	s.State = "pretrained"
	return s.write()
}

// finishedPretraining returns the result of the pre-training that an
// interrupted run of cfg in out finished, nil if there is none: its run
// state says "pretrained" for the same config, and result.json holds no
// fine-tuning yet beside a weights.npz.
func finishedPretraining(out string, cfg *config.Config, log hclog.Logger) *Result {
	if cfg.Finetune.Epochs == 0 {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(out, RunStateFile))
	var s runState
	if err != nil || json.Unmarshal(b, &s) != nil || s.State != "pretrained" || s.ConfigHash != configHash(cfg) {
		return nil
	}
	res, err := ReadResult(filepath.Join(out, ResultFile))
	if _, werr := os.Stat(filepath.Join(out, WeightsFile)); err != nil || werr != nil || res.Finetune != nil {
		log.Warn("the output folder's run finished pre-training, but its results are missing or complete; starting a new run", "dir", out)
		return nil
	}
	return res
}

// runDone records in out's run state, if there is one, that the run wrote
// its results: the same command then starts a new run.
func runDone(out string) error {
	path := filepath.Join(out, RunStateFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	var s runState
	if err != nil || json.Unmarshal(b, &s) != nil {
		return nil // openRunState warns of it next time
	}
	s.State, s.path = "done", path
	return s.write()
}

// saver keeps the latest checkpointed weights of every RBM and writes them
// to weights.npz now and then: a long run's progress is on disk, readable
// with numpy.load, before it ends (Lens saves weights periodically).
type saver struct {
	path string
	cfgs []pipeline.StageConfig
	log  hclog.Logger

	mu      sync.Mutex
	latest  map[int]pipeline.StageState
	changed bool
}

func newSaver(out string, cfgs []pipeline.StageConfig, log hclog.Logger) *saver {
	return &saver{path: filepath.Join(out, WeightsFile), cfgs: cfgs, log: log, latest: map[int]pipeline.StageState{}}
}

// checkpointed is the master's Checkpointed hook.
func (s *saver) checkpointed(rbm int, st pipeline.StageState) {
	if st.Windows == 0 || rbm < 1 || rbm > len(s.cfgs) {
		return
	}
	s.mu.Lock()
	s.latest[rbm] = st
	s.changed = true
	s.mu.Unlock()
}

// save writes the latest checkpointed weights, if any came since the last
// save: W<i>, b<i> and a<i> of every RBM checkpointed so far.
func (s *saver) save() error {
	s.mu.Lock()
	if !s.changed {
		s.mu.Unlock()
		return nil
	}
	s.changed = false
	var arrays []array
	var windows []int
	for i := 1; i <= len(s.cfgs); i++ {
		c, ok := s.latest[i]
		if !ok {
			continue
		}
		cfg := s.cfgs[i-1]
		arrays = append(arrays, rbmArrays(i, cfg.Visible, cfg.Hidden, c.W, c.A, c.B)...)
		windows = append(windows, c.Windows)
	}
	s.mu.Unlock()
	if err := writeWeights(s.path, arrays); err != nil {
		return err
	}
	s.log.Info("weights.npz refreshed from the latest checkpoints", "path", s.path, "windows", fmt.Sprint(windows))
	return nil
}

// every saves every d until the returned function is called.
func (s *saver) every(d time.Duration) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if err := s.save(); err != nil {
					s.log.Warn("cannot refresh weights.npz", "error", err)
				}
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}
