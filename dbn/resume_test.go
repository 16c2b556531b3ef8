package dbn

import (
	"archive/zip"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/sbinet/npyio/npy"

	"github.com/pipedbn/pipedbn/config"
	"github.com/pipedbn/pipedbn/pipeline"
)

// An interrupted run of the same config is resumed under its run id; a
// finished one, or one of another config, gives way to a new run.
func TestRunStateResumesOnlyTheSameInterruptedRun(t *testing.T) {
	out := t.TempDir()
	cfg := &config.Config{Name: "r", Seed: 1}
	cfg.Reliability.CheckpointEvery = 5
	log := hclog.NewNullLogger()

	first, err := openRunState(out, cfg, log)
	if err != nil || first.Resume {
		t.Fatalf("fresh folder: %+v, %v; want a new run", first, err)
	}
	again, err := openRunState(out, cfg, log)
	if err != nil || !again.Resume || again.RunID != first.RunID {
		t.Fatalf("interrupted run: %+v, %v; want run %s resumed", again, err, first.RunID)
	}
	other := *cfg
	other.Seed = 2
	if s, _ := openRunState(out, &other, log); s.Resume || s.RunID == first.RunID {
		t.Errorf("another config resumed run %s", s.RunID)
	}
	// The other config's run is now the interrupted one; finish it.
	s, _ := openRunState(out, &other, log)
	if err := s.finish(); err != nil {
		t.Fatal(err)
	}
	if s2, _ := openRunState(out, &other, log); s2.Resume {
		t.Errorf("a finished run was resumed")
	}
	off := *cfg
	off.Reliability.CheckpointEvery = 0
	os.WriteFile(filepath.Join(out, RunStateFile), []byte(`{"run_id":"x","config_hash":"`+configHash(&off)+`","state":"pretraining"}`), 0o644)
	if s, _ := openRunState(out, &off, log); s.Resume {
		t.Errorf("resumed without checkpoints to resume from")
	}
}

// The saver writes the latest checkpointed weights of each RBM, and only
// when a checkpoint came since its last save.
func TestSaverWritesLatestCheckpoints(t *testing.T) {
	out := t.TempDir()
	cfgs := []pipeline.StageConfig{{Index: 1, Visible: 3, Hidden: 2}, {Index: 2, Visible: 2, Hidden: 2}}
	s := newSaver(out, cfgs, hclog.NewNullLogger())
	ck := func(windows int, w float32) pipeline.StageState {
		return pipeline.StageState{Windows: windows, W: []float32{w, w, w, w, w, w}, A: make([]float32, 3), B: make([]float32, 2)}
	}
	if err := s.save(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.path); !os.IsNotExist(err) {
		t.Fatalf("saved before any checkpoint: %v", err)
	}
	s.checkpointed(1, ck(5, 1))
	s.checkpointed(1, ck(10, 2))
	if err := s.save(); err != nil {
		t.Fatal(err)
	}
	arrays, err := readNPZ(s.path)
	if err != nil {
		t.Fatal(err)
	}
	if w := arrays["W1"]; !slices.Equal(w, []float32{2, 2, 2, 2, 2, 2}) {
		t.Errorf("W1 = %v; want the latest checkpoint's", w)
	}
	if _, ok := arrays["W2"]; ok {
		t.Errorf("W2 saved without a checkpoint of RBM 2")
	}
}

// readNPZ reads every array of an .npz file, flattened.
func readNPZ(path string) (map[string][]float32, error) {
	z, err := zip.OpenReader(path)
	if err != nil {
		return nil, err
	}
	defer z.Close()
	out := map[string][]float32{}
	for _, f := range z.File {
		// npy's Reader reads its values 4 bytes to a Read call, and takes
		// a short read (at the end of a block the zip reader inflated) for
		// a full one: it reads from memory.
		rc, err := f.Open()
		if err != nil {
			return nil, err
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return nil, err
		}
		r, err := npy.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.Name, err)
		}
		var v []float32
		if err := r.Read(&v); err != nil {
			return nil, fmt.Errorf("%s: %w", f.Name, err)
		}
		out[strings.TrimSuffix(f.Name, ".npy")] = v
	}
	return out, nil
}
