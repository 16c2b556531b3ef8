package dbn

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/pipedbn/pipedbn/blas"
	"github.com/pipedbn/pipedbn/data"
	"github.com/pipedbn/pipedbn/finetune"
)

// Model is a finished run's network, read back from its output folder for
// master predict and transform: the pre-trained RBMs' weights, the
// fine-tuned classifier if the run fine-tuned, and the input's preparation
// (data.scale's ScaleFile, then gaussian visible units' standardisation).
type Model struct {
	// Dir is the run's output folder.
	Dir string
	// Layers are the DBN's sizes, visible first (from W1, W2, ...).
	Layers []int
	// Pretrained holds RBM_i's W_i and hidden bias b_i as layers.
	Pretrained []finetune.Layer
	// Finetuned is the classifier (ft_*), nil when the run did not
	// fine-tune.
	Finetuned *finetune.Network
	// Scaler is data.scale's fit (nil: none); InputMean and InputScale
	// the standardisation of gaussian visible units (nil: none).
	Scaler                *data.Scaler
	InputMean, InputScale []float32
}

// LoadModel reads the network of the run whose output folder is dir.
// Errors are one line naming the file and what is missing or misshapen.
func LoadModel(dir string) (*Model, error) {
	wpath := filepath.Join(dir, WeightsFile)
	if _, err := os.Stat(wpath); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("--run %s: no %s: not the output folder of a finished run", dir, WeightsFile)
	}
	arrays, err := data.ReadNPZFloats(wpath)
	if err != nil {
		return nil, err
	}
	w := weightsNPZ{wpath, arrays}
	m := &Model{Dir: dir}
	if m.Pretrained, err = w.pretrained(); err != nil {
		return nil, err
	}
	m.Layers = []int{m.Pretrained[0].In}
	for _, l := range m.Pretrained {
		m.Layers = append(m.Layers, l.Out)
	}
	if m.Finetuned, err = w.finetuned(len(m.Pretrained)); err != nil {
		return nil, err
	}
	if mean, ok := arrays[inputMean]; ok {
		scale := arrays[inputScale]
		if len(mean.Values) != m.Layers[0] || len(scale.Values) != m.Layers[0] {
			return nil, fmt.Errorf("%s: %s and %s hold %d and %d values: want %d, one per input", wpath, inputMean, inputScale, len(mean.Values), len(scale.Values), m.Layers[0])
		}
		m.InputMean, m.InputScale = mean.Values, scale.Values
	}
	if m.Scaler, err = readScaler(dir); err != nil {
		return nil, err
	}
	if m.Scaler != nil && len(m.Scaler.Offset) != m.Layers[0] {
		return nil, fmt.Errorf("%s: %d features: want %d, the DBN's inputs", filepath.Join(dir, ScaleFile), len(m.Scaler.Offset), m.Layers[0])
	}
	return m, nil
}

// weightsNPZ are the arrays of a run's WeightsFile, read from path.
type weightsNPZ struct {
	path   string
	arrays map[string]data.Array
}

// layer returns the prefixed W<id>, b<id> as a layer, or ok false when
// W<id> is absent.
func (ws weightsNPZ) layer(prefix, id string) (finetune.Layer, bool, error) {
	w, ok := ws.arrays[prefix+"W"+id]
	if !ok {
		return finetune.Layer{}, false, nil
	}
	b, ok := ws.arrays[prefix+"b"+id]
	if len(w.Shape) != 2 || !ok || len(b.Shape) != 1 || b.Shape[0] != w.Shape[1] {
		return finetune.Layer{}, false, fmt.Errorf("%s: %sW%s has shape %v and %sb%s %v: want in x out and out", ws.path, prefix, id, w.Shape, prefix, id, b.Shape)
	}
	return finetune.Layer{In: w.Shape[0], Out: w.Shape[1], W: w.Values, B: b.Values}, true, nil
}

// chain checks that each of layers takes the outputs of the one before;
// what names the layers in an error.
func (ws weightsNPZ) chain(layers []finetune.Layer, what string) error {
	for i := 1; i < len(layers); i++ {
		if layers[i].In != layers[i-1].Out {
			return fmt.Errorf("%s: %s layer %d has %d inputs, layer %d %d outputs", ws.path, what, i+1, layers[i].In, i, layers[i-1].Out)
		}
	}
	return nil
}

// pretrained returns the RBMs' layers, W1 b1, W2 b2, ... up to the first
// W<i> missing: at least one, chained.
func (ws weightsNPZ) pretrained() ([]finetune.Layer, error) {
	var layers []finetune.Layer
	for i := 1; ; i++ {
		l, ok, err := ws.layer("", strconv.Itoa(i))
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		layers = append(layers, l)
	}
	if len(layers) == 0 {
		return nil, fmt.Errorf("%s: no W1: not the weights of a pipedbn run", ws.path)
	}
	if err := ws.chain(layers, "pre-trained"); err != nil {
		return nil, err
	}
	return layers, nil
}

// finetuned returns the fine-tuned classifier, one hidden layer per RBM
// (rbms) and the output layer, chained; nil if the run did not fine-tune
// (no output layer).
func (ws weightsNPZ) finetuned(rbms int) (*finetune.Network, error) {
	out, ok, err := ws.layer(finetunePrefix, outputLayer)
	if err != nil || !ok {
		return nil, err
	}
	net := &finetune.Network{Out: out}
	for i := 1; i <= rbms; i++ {
		l, ok, err := ws.layer(finetunePrefix, strconv.Itoa(i))
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("%s: %sW%d is missing: want one fine-tuned layer per RBM", ws.path, finetunePrefix, i)
		}
		net.Hidden = append(net.Hidden, l)
	}
	if err := ws.chain(append(net.Hidden, out), "fine-tuned"); err != nil {
		return nil, err
	}
	return net, nil
}

// Prepare checks that f has the DBN's inputs and prepares its values in
// place as the run prepared its data: data.scale, then the standardisation
// of gaussian visible units.
func (m *Model) Prepare(f *data.Features) error {
	if f.Dim != m.Layers[0] {
		hint := ""
		if f.Dim == m.Layers[0]+1 {
			hint = " (a label column? drop it with --label-column)"
		}
		return fmt.Errorf("%s: %d values per example, want %d: the inputs of the DBN in %s (layers %v)%s", f.Name, f.Dim, m.Layers[0], m.Dir, m.Layers, hint)
	}
	if f.Rows == 0 {
		return fmt.Errorf("%s: no examples", f.Name)
	}
	m.Scaler.Apply(f.X)
	if m.InputMean != nil {
		(&data.Scaler{Offset: m.InputMean, Factor: m.InputScale}).Apply(f.X)
	}
	return nil
}

// Probabilities returns the fine-tuned network's class probabilities of
// prepared examples, rows x classes.
func (m *Model) Probabilities(f *data.Features) ([]float32, error) {
	if m.Finetuned == nil {
		return nil, m.notFinetuned()
	}
	p := make([]float32, f.Rows*m.Finetuned.Classes())
	m.Finetuned.Probabilities(p, f.X, f.Rows)
	return p, nil
}

// Labels returns the fine-tuned network's most probable class of each
// prepared example, as the run's reported accuracy counts it.
func (m *Model) Labels(f *data.Features) ([]int64, error) {
	if m.Finetuned == nil {
		return nil, m.notFinetuned()
	}
	pred := make([]int, f.Rows)
	m.Finetuned.Predict(pred, f.X, f.Rows)
	out := make([]int64, f.Rows)
	for i, p := range pred {
		out[i] = int64(p)
	}
	return out, nil
}

func (m *Model) notFinetuned() error {
	return fmt.Errorf("--run %s: the run has no fine-tuned network (no %sWout in %s: it ran with finetune.epochs: 0); master transform gives its pre-trained features", m.Dir, finetunePrefix, WeightsFile)
}

// Transform returns the hidden activations at layer (1 = RBM_1's hidden
// layer; 0 = the top) of prepared examples: sigmoid(x W_1 + b_1), stacked
// to that layer, with the pre-trained weights or, if finetuned, the
// fine-tuned network's hidden layers. It also returns the layer's width.
func (m *Model) Transform(f *data.Features, layer int, finetuned bool) ([]float32, int, error) {
	layers := m.Pretrained
	if finetuned {
		if m.Finetuned == nil {
			return nil, 0, m.notFinetuned()
		}
		layers = m.Finetuned.Hidden
	}
	if layer == 0 {
		layer = len(layers)
	}
	if layer < 1 || layer > len(layers) {
		return nil, 0, fmt.Errorf("--layer %d: the DBN in %s has hidden layers 1..%d (layers %v)", layer, m.Dir, len(layers), m.Layers)
	}
	const batch = finetune.EvalBatch // as Predict pushes rows through
	width := layers[layer-1].Out
	out := make([]float32, f.Rows*width)
	widest := 0
	for _, l := range layers[:layer] {
		widest = max(widest, l.Out)
	}
	bufs := [2][]float32{make([]float32, batch*widest), make([]float32, batch*widest)}
	for lo := 0; lo < f.Rows; lo += batch {
		k := min(batch, f.Rows-lo)
		in, inDim := f.X[lo*m.Layers[0]:(lo+k)*m.Layers[0]], m.Layers[0]
		for i, l := range layers[:layer] {
			h := bufs[i%2][:k*l.Out]
			if i == layer-1 {
				h = out[lo*width : (lo+k)*width]
			}
			blas.Gemm(false, false, k, l.Out, l.In, 1, in, inDim, l.W, l.Out, 0, h, l.Out)
			blas.SigmoidBias(h, k, l.Out, l.B, nil)
			in, inDim = h, l.Out
		}
	}
	return out, width, nil
}
