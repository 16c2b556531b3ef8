package dbn

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/hashicorp/go-hclog"

	"github.com/pipedbn/pipedbn/config"
	"github.com/pipedbn/pipedbn/data"
	"github.com/pipedbn/pipedbn/rbm"
)

// loadPretrained reads the RBMs of path, the weights.npz of an earlier run
// (pretrain.weights) or of this run's pre-training, instead of training
// them. Their sizes must be the DBN's; an error names the key, the file
// and what differs.
func loadPretrained(cfg *config.Config, path string, log hclog.Logger) (*trained, error) {
	arrays, err := data.ReadNPZFloats(path)
	if err != nil {
		return nil, fmt.Errorf("pretrain.weights = %q: %w", path, err)
	}
	ws := weightsNPZ{path, arrays}
	layers, err := ws.pretrained()
	if err != nil {
		return nil, fmt.Errorf("pretrain.weights = %q: %w", path, err)
	}
	sizes := []int{layers[0].In}
	for _, l := range layers {
		sizes = append(sizes, l.Out)
	}
	if fmt.Sprint(sizes) != fmt.Sprint(cfg.DBN.Layers) {
		return nil, fmt.Errorf("pretrain.weights = %q: its RBMs make a DBN of layers %v: want dbn.layers = %v", path, sizes, cfg.DBN.Layers)
	}
	t := &trained{}
	for i, l := range layers {
		r := &rbm.RBM{Visible: l.In, Hidden: l.Out, Units: rbm.Bernoulli, W: l.W, B: l.B}
		if i == 0 {
			r.Units = cfg.DBN.Visible
		}
		name := visibleBias + strconv.Itoa(i+1)
		switch a, ok := arrays[name]; {
		case ok && len(a.Values) == l.In:
			r.A = a.Values
		case ok:
			return nil, fmt.Errorf("pretrain.weights = %q: %s holds %d values: want %d, RBM_%d's visible units", path, name, len(a.Values), l.In, i+1)
		case i > 0:
			// Files of earlier releases keep a1 only: the L_i-copy's rule
			// gives the others, which fine-tuning does not use.
			r.A = slices.Clone(layers[i-1].B)
			if i == 1 {
				log.Warn("the file holds no visible biases but a1 (an earlier release wrote it): the upper RBMs' final reconstruction errors are measured with the hidden biases of the RBM below in their place", "pretrain.weights", path)
			}
		default:
			r.A = make([]float32, l.In)
		}
		t.add(r, RBMResult{Index: i + 1, Visible: l.In, Hidden: l.Out, Worker: "loaded"})
	}
	return t, nil
}
