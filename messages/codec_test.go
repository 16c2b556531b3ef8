package messages

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/pipedbn/pipedbn/internal/narrow"
)

// testChunk returns a window of RBM_1's middle result: len(batchRows)
// mini-batches of hidden probabilities with cols hidden units.
func testChunk(seed uint64, cols int, batchRows ...int) *Chunk {
	rng := rand.New(rand.NewPCG(seed, 1))
	rows := 0
	for _, n := range batchRows {
		rows += n
	}
	c := &Chunk{
		RunID:       "quickstart-20250101T120000",
		Incarnation: 2,
		RBM:         1,
		Epoch:       3,
		Seq:         47,
		FirstBatch:  230,
		Rows:        rows,
		Cols:        cols,
		Data:        make([]float32, rows*cols),
		BatchRows:   batchRows,
		Bias:        make([]float32, cols),
		Labels:      make([]byte, rows),
	}
	for i := range c.Labels {
		c.Labels[i] = byte(1 + rng.IntN(9))
	}
	for i := range c.Data {
		c.Data[i] = rng.Float32()
	}
	for i := range c.Bias {
		c.Bias[i] = float32(rng.NormFloat64() * 0.1)
	}
	return c
}

// testChunkIn is testChunk with its values in encoding e, rounded to it
// as a producer rounds them: samples (0 or 1) for EncodingBits.
func testChunkIn(e Encoding, seed uint64, cols int, batchRows ...int) *Chunk {
	c := testChunk(seed, cols, batchRows...)
	c.Encoding = e
	for i, x := range c.Data {
		c.Data[i] = roundTo(e, x)
	}
	return c
}

// roundTo is what value x reads back as after a trip in encoding e.
func roundTo(e Encoding, x float32) float32 {
	switch e {
	case EncodingFloat16:
		return narrow.FromFloat16(narrow.Float16(x))
	case EncodingUint8:
		return narrow.FromUint8(narrow.Uint8(x))
	case EncodingBits:
		return float32(narrow.Bit(x))
	}
	return x
}

func testWeights(visible, hidden int) *Weights {
	rng := rand.New(rand.NewPCG(7, 7))
	w := &Weights{
		RunID: "quickstart-20250101T120000", Incarnation: 2, RBM: 2, Replica: 1, Visible: visible, Hidden: hidden,
		W: make([]float32, visible*hidden), A: make([]float32, visible), B: make([]float32, hidden),
		ReconErrors: []float64{0.0712, 0.0523, 0.0488},
		Batches:     705, BusySeconds: 11.04, WaitSeconds: 0.41, BytesIn: 183_500_800, BytesOut: 125_440_000,
	}
	for i := range w.W {
		w.W[i] = float32(rng.NormFloat64() * 0.01)
	}
	for i := range w.A {
		w.A[i] = float32(rng.NormFloat64())
	}
	for i := range w.B {
		w.B[i] = float32(rng.NormFloat64())
	}
	return w
}

// testMessages returns real-looking messages: one of every kind with every
// field set (TestRoundTrip checks that), and a few sparse ones.
func testMessages() []Message {
	return []Message{
		&Register{Name: "slave-3", Host: "node07.cluster", CPUs: 4, PID: 41235, Protocol: Version, Process: 0x9e3779b97f4a7c15},
		&Assign{
			RunID: "quickstart-20250101T120000", Incarnation: 2, RBM: 2, RBMs: 3, Visible: 500, Hidden: 500,
			Units: UnitsBernoulli, Epochs: 20, BatchSize: 256, K: 10, CDK: 1, Middle: MiddleProbabilities,
			LearningRate: Schedule{Initial: 0.015, Final: 0.002}, Momentum: Schedule{Initial: 0.5, Final: 0.9},
			WeightDecay: 0.0002, Seed: 1, BatchesPerEpoch: 235, RowsPerEpoch: 60000,
			Upstream: []string{"slave-1a", "slave-1b"}, Downstream: []string{"slave-3"}, Replica: 1, Replicas: 2, SyncEvery: 4,
			Credits: 4, CheckpointEvery: 5, Resume: true, Process: 0x9e3779b97f4a7c15,
			SettleFrom: 120, SettleWindows: 12, SettleStart: 123, SettleTrain: 6, SettleLearningRate: 0.03, LCopyOnce: true,
			Net: []int{500, 64, 500}, Dropout: 0.2, InputDropout: 0.1, MaxNorm: 3, LabelSmoothing: 0.05, RateRule: "sqrt", WarmupWindows: 40,
			MiddleEncoding: EncodingUint8, BlockMomentum: 0.5,
		},
		testChunk(1, 16, 8, 8, 3),
		&EndOfStream{RunID: "quickstart-20250101T120000", Incarnation: 2, RBM: 1, Epoch: 20, Windows: 480},
		&Credit{RunID: "quickstart-20250101T120000", Incarnation: 2, RBM: 1, UpTo: 50, Next: 47, Durable: 40, Resend: true},
		&Status{
			RunID: "quickstart-20250101T120000", Incarnation: 2, RBM: 2, Replica: 1, Slave: "slave-2", Process: 0x9e3779b97f4a7c15, State: StateWaitingInput,
			Epoch: 4, Batches: 801, ReconError: 0.0391, ReconErrors: []float64{0.061, 0.047, 0.042},
			BusySeconds: 31.5, WaitSeconds: 2.25, BytesIn: 98_000_000, BytesOut: 97_000_000,
			Rejected: Rejections{RejectCorrupt: 3, RejectForeign: 1, RejectShape: 2, RejectDuplicate: 17, RejectGap: 5, RejectStale: 4},
			Upstream: []string{"slave-1a", "slave-1b"}, Downstream: []string{"slave-3"},
		},
		&Status{Slave: "slave-9", State: StateIdle},
		testWeights(7, 5),
		&Error{RunID: "quickstart-20250101T120000", Incarnation: 2, RBM: 3, Replica: 1, Text: "interrupt (at window 40)", Stopped: true},
		&Error{RunID: "quickstart-20250101T120000", RBM: 3, Text: "rbm: reconstruction error is NaN at epoch 2"},
		&Stop{RunID: "quickstart-20250101T120000", Incarnation: 2, Reason: "slave-2 failed", Process: 77},
		testCheckpoint(6, 4),
		&Checkpoint{RunID: "quickstart-20250101T120000", RBM: 2},
		&CheckpointAck{RunID: "quickstart-20250101T120000", Incarnation: 2, RBM: 2, Replica: 1, Windows: 40, Durable: 30},
		&Params{
			RunID: "quickstart-20250101T120000", Incarnation: 2, RBM: 3, Replica: 1, Round: 7, Final: true, Windows: 4, Visible: 2, Hidden: 3,
			W: []float32{0.5, -0.25, 1, 2, -3, 0.125}, A: []float32{0.1, -0.1}, B: []float32{1, 2, 3},
		},
		// The flat parameter vector of the network of data-parallel fine-tuning.
		&Params{RunID: "quickstart-ft", RBM: 1, Replica: 2, Round: 3, Windows: 1, Visible: 4, W: []float32{1, -2, 3, 0.5}},
		&Weights{RunID: "quickstart-ft", RBM: 1, Visible: 3, W: []float32{1, 2, 3}, ReconErrors: []float64{2.1, 0.4}, Batches: 9},
		&Admission{Slave: "slave-3", Outcome: InUse, Reason: "name slave-3 is taken", Process: 12},
		&Admission{Slave: "slave-4", Outcome: Admitted},
		testChunkIn(EncodingFloat16, 2, 16, 8, 8, 3),
		testChunkIn(EncodingUint8, 3, 5, 4, 1),
		testChunkIn(EncodingBits, 4, 7, 3, 2),
	}
}

// TestRoundTripSpecialFloats checks that float arrays keep their exact
// bits, NaN payloads and signed zeros included.
func TestRoundTripSpecialFloats(t *testing.T) {
	t.Parallel()
	vals := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)),
		math.Float32frombits(0x7fc00001), math.SmallestNonzeroFloat32, math.MaxFloat32}
	c := &Chunk{RunID: "r", RBM: 1, Rows: 1, Cols: len(vals), Data: vals, BatchRows: []int{1}, Bias: vals}
	b, err := Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	got := m.(*Chunk)
	for i, v := range vals {
		if math.Float32bits(got.Data[i]) != math.Float32bits(v) || math.Float32bits(got.Bias[i]) != math.Float32bits(v) {
			t.Errorf("value %d = %x, %x; want %x", i, math.Float32bits(got.Data[i]), math.Float32bits(got.Bias[i]), math.Float32bits(v))
		}
	}
}

func TestKindString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		k    Kind
		want string
	}{
		{KindRegister, "register"}, {KindChunk, "chunk"}, {KindEndOfStream, "end-of-stream"},
		{KindStop, "stop"}, {0, "Kind(0)"}, {kindEnd, "Kind(16)"}, {KindParams, "params"}, {KindCheckpoint, "checkpoint"},
		{KindAdmission, "admission"}, {kindRetired4, "Kind(4)"}, {kindRetired10, "Kind(10)"},
	}
	for _, tt := range tests {
		if got := tt.k.String(); got != tt.want {
			t.Errorf("Kind(%d).String() = %q; want %q", uint8(tt.k), got, tt.want)
		}
	}
	for k := range kindEnd {
		m := newMessage(k)
		if k.valid() && (m == nil || m.Kind() != k) {
			t.Errorf("newMessage(%v) = %v; want a %v", k, m, k)
		}
		if !k.valid() && m != nil {
			t.Errorf("newMessage(%v) = %v; want nil", k, m)
		}
	}
}

// TestKindRoutes checks the routes of every kind in use, as transports
// split them among their channels (natsnet's subjects).
func TestKindRoutes(t *testing.T) {
	t.Parallel()
	want := map[Route][]Kind{
		Join:       {KindRegister},
		Control:    {KindAssign, KindStop, KindCheckpoint, KindCheckpointAck, KindAdmission, KindParams},
		Report:     {KindStatus, KindWeights, KindError, KindCheckpoint, KindParams},
		Downstream: {KindChunk, KindEndOfStream},
		Upstream:   {KindCredit},
	}
	for r, kinds := range want {
		if got := KindsOn(r); !slices.Equal(got, kinds) {
			t.Errorf("KindsOn(%v) = %v; want %v", r, got, kinds)
		}
	}
	all := Kinds()
	if len(all) != 13 || all[0] != KindRegister || all[len(all)-1] != KindParams {
		t.Errorf("Kinds() = %v; want the 13 kinds in use, register to params", all)
	}
	for _, k := range all {
		if k.Routes() == 0 {
			t.Errorf("%v.Routes() = 0; want a route", k)
		}
	}
	for _, k := range []Kind{0, kindRetired4, kindRetired10, kindEnd} {
		if r := k.Routes(); r != 0 || slices.Contains(all, k) {
			t.Errorf("Kind(%d): Routes() = %v, in Kinds() %t; want neither", uint8(k), r, slices.Contains(all, k))
		}
	}
	for r, want := range map[Route]string{0: "none", Join: "join", Control | Report: "control+report", 0x80: "Route(0x80)"} {
		if got := r.String(); got != want {
			t.Errorf("Route(%#x).String() = %q; want %q", uint8(r), got, want)
		}
	}
}

func TestStateString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		s    State
		want string
	}{
		{StateIdle, "idle"}, {StateTraining, "training"}, {StateWaitingInput, "waiting-input"},
		{StateWaitingCredit, "waiting-credit"}, {StateDone, "done"}, {StateFailed, "failed"}, {9, "State(9)"},
	}
	for _, tt := range tests {
		if got := tt.s.String(); got != tt.want {
			t.Errorf("State(%d).String() = %q; want %q", uint8(tt.s), got, tt.want)
		}
	}
}

// frame wraps body in a valid header and checksum, so that tests reach the
// body checks.
func frame(k Kind, body []byte) []byte {
	b := []byte(magic)
	b = binary.LittleEndian.AppendUint16(b, Version)
	b = append(b, byte(k))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(body)))
	b = append(b, body...)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// body encodes m's body without validating it, for frame.
func body(m Message) []byte {
	c := coder{base: -headerSize} // the body's place in the message: f32s pads by it
	m.fields(&c)
	return c.b
}

// refresh recomputes the checksum of an encoded message after an edit.
func refresh(b []byte) []byte {
	end := len(b) - trailerSize
	binary.LittleEndian.PutUint32(b[end:], crc32.Checksum(b[:end], castagnoli))
	return b
}

func TestDecodeErrors(t *testing.T) {
	t.Parallel()
	valid, err := Encode(testChunk(2, 4, 3, 2))
	if err != nil {
		t.Fatal(err)
	}
	edit := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), valid...)) }
	chunk := func(f func(c *Chunk)) []byte {
		c := testChunk(2, 4, 3, 2)
		f(c)
		return frame(KindChunk, body(c))
	}
	// A chunk body whose data length prefix claims 2^32-1 floats.
	hugeData := body(&Chunk{RunID: "r", RBM: 1, BatchRows: []int{1}})
	binary.LittleEndian.PutUint32(hugeData[len(hugeData)-4:], math.MaxUint32)

	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"nil", nil, ErrTruncated},
		{"short magic", []byte("PDB"), ErrTruncated},
		{"header only", valid[:headerSize], ErrTruncated},
		{"wrong magic", edit(func(b []byte) []byte { b[0] = 'X'; return b }), ErrMagic},
		{"json", []byte(`{"kind":"chunk"}`), ErrMagic},
		{"version 1", edit(func(b []byte) []byte { b[4] = 1; return refresh(b) }), ErrVersion},
		{"version 2", edit(func(b []byte) []byte { b[4] = 2; return refresh(b) }), ErrVersion},
		{"version 3", edit(func(b []byte) []byte { b[4] = 3; return refresh(b) }), ErrVersion},
		{"version 4", edit(func(b []byte) []byte { b[4] = 4; return refresh(b) }), ErrVersion},
		{"version 5", edit(func(b []byte) []byte { b[4] = 5; return refresh(b) }), ErrVersion},
		{"version 6", edit(func(b []byte) []byte { b[4] = 6; return refresh(b) }), ErrVersion},
		{"version 7", edit(func(b []byte) []byte { b[4] = 7; return refresh(b) }), ErrVersion},
		{"version 8", edit(func(b []byte) []byte { b[4] = 8; return refresh(b) }), ErrVersion},
		{"version 9", edit(func(b []byte) []byte { b[4] = 9; return refresh(b) }), ErrVersion},
		{"version from the future", edit(func(b []byte) []byte { b[4] = byte(Version + 1); return refresh(b) }), ErrVersion},
		{"version 0", edit(func(b []byte) []byte { b[4] = 0; return refresh(b) }), ErrVersion},
		{"flipped body bit", edit(func(b []byte) []byte { b[headerSize+20] ^= 1; return b }), ErrChecksum},
		{"flipped crc bit", edit(func(b []byte) []byte { b[len(b)-1] ^= 0x80; return b }), ErrChecksum},
		{"flipped kind", edit(func(b []byte) []byte { b[6] = byte(KindWeights); return b }), ErrChecksum},
		{"truncated", valid[:len(valid)-1], ErrTruncated},
		{"truncated body", valid[:len(valid)-30], ErrTruncated},
		{"trailing byte", append(append([]byte(nil), valid...), 0), ErrTrailing},
		{"two messages", append(append([]byte(nil), valid...), valid...), ErrTrailing},
		{"body length too big", edit(func(b []byte) []byte { b[7]++; return refresh(b) }), ErrTruncated},
		{"body length too small", edit(func(b []byte) []byte { b[7]--; return refresh(b) }), ErrTrailing},
		{"kind 0", frame(0, body(&Stop{})), ErrKind},
		{"kind 200", frame(200, body(&Stop{})), ErrKind},
		{"field truncated", frame(KindChunk, body(testChunk(2, 4, 3, 2))[:40]), ErrTruncated},
		{"huge data length", frame(KindChunk, hugeData), ErrTruncated},
		{"huge string length", frame(KindStop, []byte{0xff, 0xff, 0xff, 0xff, 'x'}), ErrTruncated},
		{"empty body", frame(KindChunk, nil), ErrTruncated},
		{"bytes after fields", frame(KindStop, append(body(&Stop{RunID: "r"}), 0)), ErrTrailing},
		{"rows*cols != len(data)", chunk(func(c *Chunk) { c.Rows++; c.BatchRows[1]++ }), ErrShape},
		{"data too short", chunk(func(c *Chunk) { c.Data = c.Data[:len(c.Data)-1] }), ErrShape},
		{"bias != cols", chunk(func(c *Chunk) { c.Bias = c.Bias[1:] }), ErrShape},
		{"labels != rows", chunk(func(c *Chunk) { c.Labels = c.Labels[1:] }), ErrShape},
		{"batch rows sum", chunk(func(c *Chunk) { c.BatchRows[0]-- }), ErrShape},
		{"no batches", chunk(func(c *Chunk) { c.BatchRows = nil }), ErrShape},
		{"empty batch", chunk(func(c *Chunk) { c.BatchRows = []int{5, 0} }), ErrShape},
		{"negative batch", chunk(func(c *Chunk) { c.BatchRows = []int{6, -1} }), ErrShape},
		{"zero cols", chunk(func(c *Chunk) { c.Cols, c.Data, c.Bias = 0, nil, nil }), ErrShape},
		{"rows*cols overflows", chunk(func(c *Chunk) { c.Rows, c.Cols = math.MaxInt/2+1, 4 }), ErrShape},
		{"negative producer", chunk(func(c *Chunk) { c.RBM = -1 }), ErrInvalid},
		{"negative epoch", chunk(func(c *Chunk) { c.Epoch = -1 }), ErrInvalid},
		{"unknown encoding", frame(KindChunk, func() []byte {
			b := body(testChunkIn(EncodingUint8, 2, 4, 3, 2))
			b[len(b)-4*6-1] = byte(encodingEnd) // the byte before the data's 4-byte count and 24 codes
			return b
		}()), ErrInvalid},
		{"float16 data truncated", frame(KindChunk, func() []byte { b := body(testChunkIn(EncodingFloat16, 2, 4, 3, 2)); return b[:len(b)-1] }()), ErrTruncated},
		{"bits data truncated", frame(KindChunk, func() []byte { b := body(testChunkIn(EncodingBits, 2, 4, 3, 2)); return b[:len(b)-1] }()), ErrTruncated},
		{"bits unused bits set", frame(KindChunk, func() []byte {
			b := body(testChunkIn(EncodingBits, 2, 3, 3)) // 9 values: 7 bits unused
			b[len(b)-1] |= 0x80
			return b
		}()), ErrInvalid},
		{"bits shape", frame(KindChunk, func() []byte { // 9 values of a 2 x 4 chunk
			c := testChunkIn(EncodingBits, 2, 4, 2)
			c.Data = append(c.Data, 1)
			return body(c)
		}()), ErrShape},
		{"narrow values beyond a message", frame(KindChunk, func() []byte {
			b := body(&Chunk{RunID: "r", RBM: 1, BatchRows: []int{1}, Encoding: EncodingBits})
			return binary.LittleEndian.AppendUint32(b[:len(b)-4], maxNarrowValues+1)
		}()), ErrTooLarge},
		{"w != visible*hidden", frame(KindWeights, body(func() *Weights { w := testWeights(3, 2); w.W = w.W[:5]; return w }())), ErrShape},
		{"a != visible", frame(KindWeights, body(func() *Weights { w := testWeights(3, 2); w.A = w.A[:2]; return w }())), ErrShape},
		{"b != hidden", frame(KindWeights, body(func() *Weights { w := testWeights(3, 2); w.B = nil; return w }())), ErrShape},
		{"carried momentum NaN", frame(KindCheckpoint, body(func() *Checkpoint { c := testCheckpoint(3, 2); c.VelWCarry = math.NaN(); return c }())), ErrInvalid},
		{"carried momentum beyond float32", frame(KindCheckpoint, body(func() *Checkpoint { c := testCheckpoint(3, 2); c.VelWCarry = -1e39; return c }())), ErrInvalid},
		{"unknown state", frame(KindStatus, body(&Status{State: stateEnd})), ErrInvalid},
		{"unknown units", frame(KindAssign, body(&Assign{RBM: 1, RBMs: 1, Visible: 1, Hidden: 1, Units: "relu", Middle: MiddleSamples, BatchSize: 1, K: 1, CDK: 1})), ErrInvalid},
		{"rbm beyond rbms", frame(KindAssign, body(&Assign{RBM: 4, RBMs: 3, Visible: 1, Hidden: 1, Units: UnitsGaussian, Middle: MiddleSamples, BatchSize: 1, K: 1, CDK: 1})), ErrInvalid},
		{"zero batch size", frame(KindAssign, body(&Assign{RBM: 1, RBMs: 1, Visible: 1, Hidden: 1, Units: UnitsGaussian, Middle: MiddleSamples, K: 1, CDK: 1})), ErrInvalid},
		{"negative pid", frame(KindRegister, body(&Register{PID: -1})), ErrInvalid},
		{"credit to rbm -1", frame(KindCredit, body(&Credit{RunID: "r", RBM: -1})), ErrInvalid},
		{"outcome 0", frame(KindAdmission, body(&Admission{Slave: "s"})), ErrInvalid},
		{"outcome beyond refused", frame(KindAdmission, body(&Admission{Slave: "s", Outcome: outcomeEnd})), ErrInvalid},
		{"admission truncated", frame(KindAdmission, body(&Admission{Slave: "s", Outcome: Full})[:5]), ErrTruncated},
		{"stopped 2", frame(KindError, func() []byte { b := body(&Error{RunID: "r", Stopped: true}); b[len(b)-1] = 2; return b }()), ErrInvalid},
		{"incarnation truncated", frame(KindStop, []byte{1, 0, 0, 0, 'r', 9, 9}), ErrTruncated},
		{"too many rejection counts", frame(KindStatus, statusWithCounts(maxRejectReasons+1)), ErrInvalid},
		{"rejection counts truncated", frame(KindStatus, func() []byte { b := statusWithCounts(len(Rejections{})); return b[:len(b)-1] }()), ErrTruncated},
		{"assign without upstream", frame(KindAssign, body(&Assign{RBM: 1, RBMs: 1, Visible: 1, Hidden: 1, Units: UnitsGaussian, Middle: MiddleSamples, BatchSize: 1, K: 1, CDK: 1, Credits: 1, Replicas: 1})), ErrInvalid},
		{"assign to replica 2 of 2", frame(KindAssign, body(&Assign{RBM: 1, RBMs: 1, Visible: 1, Hidden: 1, Units: UnitsGaussian, Middle: MiddleSamples, BatchSize: 1, K: 1, CDK: 1, Credits: 1, Upstream: []string{"master"}, Replica: 2, Replicas: 2, SyncEvery: 1})), ErrInvalid},
		{"replicas without sync", frame(KindAssign, body(&Assign{RBM: 1, RBMs: 1, Visible: 1, Hidden: 1, Units: UnitsGaussian, Middle: MiddleSamples, BatchSize: 1, K: 1, CDK: 1, Credits: 1, Upstream: []string{"master"}, Replica: 1, Replicas: 2})), ErrInvalid},
		{"params round 0", frame(KindParams, body(&Params{RunID: "r", RBM: 1, Visible: 1, Hidden: 1, W: []float32{1}, A: []float32{1}, B: []float32{1}})), ErrInvalid},
		{"params w != visible*hidden", frame(KindParams, body(&Params{RunID: "r", RBM: 1, Round: 1, Visible: 2, Hidden: 1, W: []float32{1}, A: []float32{1, 2}, B: []float32{1}})), ErrShape},
		{"upstream count beyond the input", frame(KindStatus, func() []byte {
			b := body(&Status{Slave: "s", State: StateIdle})
			return append(b[:len(b)-8], 0xff, 0xff, 0xff, 0x0f)
		}()), ErrTruncated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, err := Decode(tt.in)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Decode() = %v, %v; want error %v", m, err, tt.want)
			}
			if m != nil {
				t.Errorf("Decode() message = %v; want nil with an error", m)
			}
		})
	}
}

func TestEncodeErrors(t *testing.T) {
	t.Parallel()
	badChunk := testChunk(3, 4, 2)
	badChunk.Bias = nil
	tests := []struct {
		name string
		m    Message
		want error
	}{
		{"nil", nil, ErrInvalid},
		{"nil chunk", (*Chunk)(nil), ErrInvalid},
		{"bias != cols", badChunk, ErrShape},
		{"zero assign", &Assign{}, ErrInvalid},
		{"zero weights", &Weights{RBM: 1}, ErrShape},
		{"admission without outcome", &Admission{Slave: "slave-1"}, ErrInvalid},
		{"unknown state", &Status{State: stateEnd}, ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, err := Encode(tt.m)
			if !errors.Is(err, tt.want) || b != nil {
				t.Errorf("Encode() = %d bytes, %v; want error %v", len(b), err, tt.want)
			}
		})
	}
}

func TestChunkCheck(t *testing.T) {
	t.Parallel()
	const run = "quickstart-20250101T120000"
	broken := testChunk(4, 5, 2)
	broken.Data = broken.Data[1:]
	tests := []struct {
		name     string
		c        *Chunk
		run      string
		producer int
		cols     int
		want     error
	}{
		{"ok", testChunk(4, 5, 2, 2), run, 1, 5, nil},
		{"other run", testChunk(4, 5, 2), "old-run", 1, 5, ErrMismatch},
		{"other producer", testChunk(4, 5, 2), run, 2, 5, ErrMismatch},
		{"other cols", testChunk(4, 5, 2), run, 1, 6, ErrShape},
		{"inconsistent", broken, run, 1, 5, ErrShape},
		{"nil", nil, run, 1, 5, ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.c.Check(tt.run, tt.producer, tt.cols)
			if tt.want == nil && err != nil || !errors.Is(err, tt.want) {
				t.Errorf("Check(%q, %d, %d) = %v; want %v", tt.run, tt.producer, tt.cols, err, tt.want)
			}
		})
	}
}

func TestWeightsCheck(t *testing.T) {
	t.Parallel()
	w := testWeights(4, 3)
	tests := []struct {
		name                 string
		run                  string
		rbm, visible, hidden int
		want                 error
	}{
		{"ok", w.RunID, 2, 4, 3, nil},
		{"other run", "x", 2, 4, 3, ErrMismatch},
		{"other rbm", w.RunID, 1, 4, 3, ErrMismatch},
		{"other shape", w.RunID, 2, 3, 4, ErrShape},
	}
	for _, tt := range tests {
		err := w.Check(tt.run, tt.rbm, tt.visible, tt.hidden)
		if tt.want == nil && err != nil || !errors.Is(err, tt.want) {
			t.Errorf("%s: Check() = %v; want %v", tt.name, err, tt.want)
		}
	}
}

func TestChunkBatch(t *testing.T) {
	t.Parallel()
	c := testChunk(5, 3, 4, 4, 1)
	for j, lo := range []int{0, 4, 8} {
		got := c.Batch(j)
		want := c.Data[lo*3 : (lo+c.BatchRows[j])*3]
		if len(got) != len(want) || &got[0] != &want[0] {
			t.Errorf("Batch(%d) = rows at %p, len %d; want rows from %d, len %d", j, &got[0], len(got), lo, len(want))
		}
	}
}

func testCheckpoint(v, h int) *Checkpoint {
	c := &Checkpoint{
		RunID: "quickstart-20250101T120000", Incarnation: 2, RBM: 2, Replica: 1, Visible: v, Hidden: h, Windows: 40, Epoch: 1,
		EpochSSE: 12.5, EpochElems: 4000, EpochEnded: true, Batches: 400, Rows: 102400, ReconErrors: []float64{0.05},
		ReconError: 0.04, BusySeconds: 3, WaitInputSeconds: 0.5, WaitCreditSeconds: 0.25,
		W: make([]float32, v*h), A: make([]float32, v), B: make([]float32, h),
		VelW: make([]float32, v*h), VelA: make([]float32, v), VelB: make([]float32, h), VelWCarry: 0.9,
		RNG: make([]uint32, CheckpointRNGWords), BlockStep: make([]float32, v*h),
	}
	for i := range c.W {
		c.W[i], c.VelW[i], c.BlockStep[i] = float32(i+1)/10, -float32(i+1)/100, float32(i+1)/1000
	}
	for i := range c.A {
		c.A[i], c.VelA[i] = float32(i)+0.5, -float32(i)-0.25
	}
	for i := range c.B {
		c.B[i], c.VelB[i] = -float32(i)-0.5, float32(i)+0.75
	}
	for i := range c.RNG {
		c.RNG[i] = uint32(i*2654435761 + 1)
	}
	return c
}

// A flat parameter vector (Hidden 0) is W alone: A, B or a length other
// than Visible make it malformed.
func TestFlatParamsShape(t *testing.T) {
	t.Parallel()
	flat := func(f func(p *Params)) error {
		p := &Params{RunID: "r", RBM: 1, Round: 1, Visible: 3, W: []float32{1, 2, 3}}
		f(p)
		return p.Check("r", 1, 3, 0)
	}
	if err := flat(func(*Params) {}); err != nil {
		t.Fatalf("a flat vector of 3: %v", err)
	}
	for name, f := range map[string]func(p *Params){
		"with a":      func(p *Params) { p.A = []float32{0, 0, 0} },
		"with b":      func(p *Params) { p.B = []float32{0} },
		"short w":     func(p *Params) { p.W = p.W[:2] },
		"no values":   func(p *Params) { p.W, p.Visible = nil, 0 },
		"as a matrix": func(p *Params) { p.Hidden = 1 },
	} {
		if err := flat(f); !errors.Is(err, ErrShape) {
			t.Errorf("%s: Check() = %v; want ErrShape", name, err)
		}
	}
	cp := &Checkpoint{RunID: "r", RBM: 1, Windows: 2, Visible: 2, W: []float32{1, 2}, VelW: []float32{0, 0}, RNG: make([]uint32, CheckpointRNGWords)}
	if err := cp.Check("r", 1, 0, 2, 0); err != nil {
		t.Fatalf("a flat checkpoint: %v", err)
	}
	cp.BlockStep = []float32{0.5, 0.25}
	if err := cp.Check("r", 1, 0, 2, 0); err != nil {
		t.Fatalf("a flat checkpoint with a block step: %v", err)
	}
	cp.BlockStep = cp.BlockStep[:1]
	if err := cp.Check("r", 1, 0, 2, 0); !errors.Is(err, ErrShape) {
		t.Errorf("a flat checkpoint with a short block step: Check() = %v; want ErrShape", err)
	}
	cp.BlockStep = nil
	cp.VelW = cp.VelW[:1]
	if err := cp.Check("r", 1, 0, 2, 0); !errors.Is(err, ErrShape) {
		t.Errorf("a flat checkpoint with a short velocity: Check() = %v; want ErrShape", err)
	}
}
