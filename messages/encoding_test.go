package messages

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestEncodingsRoundTrip checks each encoding of a window's values: what
// Decode, DecodeOwned and a Reassembler read back is each value rounded to
// the encoding's nearest code (exact for values rounded before, as a
// producer sends them), the bias stays float32, and the message is as much
// shorter as the encoding's bytes per value say.
func TestEncodingsRoundTrip(t *testing.T) {
	t.Parallel()
	plain := testChunk(8, 13, 16, 16, 5)
	plainLen := encodedLen(t, plain)
	for _, e := range []Encoding{EncodingFloat32, EncodingFloat16, EncodingUint8, EncodingBits} {
		t.Run(e.String(), func(t *testing.T) {
			t.Parallel()
			sent := testChunk(8, 13, 16, 16, 5) // unrounded values
			if e == EncodingBits {
				for i := range sent.Data {
					sent.Data[i] = float32(i % 3 % 2)
				}
			}
			sent.Data[0], sent.Data[1] = 0, 1
			sent.Encoding = e
			b, err := Encode(sent)
			if err != nil {
				t.Fatal(err)
			}
			// Narrower by the encoding's bytes, and by the float32 array's
			// padding (0 to 3 bytes), which no other encoding has.
			saved, want := int64(plainLen-len(b)), EncodingFloat32.Bytes(len(sent.Data))-e.Bytes(len(sent.Data))
			if saved < want || saved > want+3 {
				t.Errorf("encoded in %d bytes, %d fewer than float32's; want %d to %d fewer", len(b), saved, want, want+3)
			}
			for name, decode := range map[string]func([]byte) (Message, error){
				"Decode": Decode, "DecodeOwned": func(b []byte) (Message, error) { return DecodeOwned(append([]byte(nil), b...)) },
				"AddMessage": func(b []byte) (Message, error) {
					var r Reassembler
					m, _, err := r.AddMessage(Split(b, 1<<20, 1)[0])
					return m, err
				},
			} {
				m, err := decode(b)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				got := m.(*Chunk)
				if got.Encoding != e || len(got.Data) != len(sent.Data) || len(got.Bias) != len(sent.Bias) {
					t.Fatalf("%s: %v, %d values, %d biases; want %v, %d, %d", name, got.Encoding, len(got.Data), len(got.Bias), e, len(sent.Data), len(sent.Bias))
				}
				for i, x := range sent.Data {
					if want := roundTo(e, x); math.Float32bits(got.Data[i]) != math.Float32bits(want) {
						t.Fatalf("%s: value %d = %g; want %g, %g rounded", name, i, got.Data[i], want, x)
					}
				}
				for i, x := range sent.Bias {
					if got.Bias[i] != x {
						t.Fatalf("%s: bias %d = %g; want %g as sent", name, i, got.Bias[i], x)
					}
				}
			}
			// A rounded window travels exactly, and encodes again to the
			// same bytes.
			again, err := Encode(testChunkIn(e, 8, 13, 16, 16, 5))
			if err != nil {
				t.Fatal(err)
			}
			m, err := Decode(again)
			if err != nil {
				t.Fatal(err)
			}
			if b2, _ := Encode(m); string(b2) != string(again) {
				t.Errorf("Encode(Decode(b)) differs from b")
			}
		})
	}
}

func encodedLen(t *testing.T, m Message) int {
	t.Helper()
	b, err := Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	return len(b)
}

// TestEncodingBytes checks the bytes per value, and the bytes of a window
// of the quickstart DBN's RBM_1 at K = 10 (2560 rows of 500 values).
func TestEncodingBytes(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		e    Encoding
		n    int
		want int64
	}{
		{EncodingFloat32, 3, 12}, {EncodingFloat16, 3, 6}, {EncodingUint8, 3, 3}, {EncodingBits, 3, 1},
		{EncodingBits, 8, 1}, {EncodingBits, 9, 2}, {EncodingBits, 0, 0}, {EncodingFloat16, -1, 0}, {encodingEnd, 5, 0},
		{EncodingFloat32, 2560 * 500, 5_120_000}, {EncodingFloat16, 2560 * 500, 2_560_000}, {EncodingUint8, 2560 * 500, 1_280_000},
		{EncodingBits, 2560 * 500, 160_000},
	} {
		if got := tt.e.Bytes(tt.n); got != tt.want {
			t.Errorf("%v.Bytes(%d) = %d; want %d", tt.e, tt.n, got, tt.want)
		}
	}
	c := testChunkIn(EncodingUint8, 1, 4, 3)
	if got, want := c.ValueBytes(), int64(12+4*4); got != want {
		t.Errorf("ValueBytes() of 12 uint8 values and 4 biases = %d; want %d", got, want)
	}
}

// TestChunkEncodedSize checks EncodedSize against what Encode writes, for
// chunks of every encoding whose arrays start at every offset modulo 4:
// run ids of 0 to 4 bytes, with and without biases and labels, of odd
// lengths.
func TestChunkEncodedSize(t *testing.T) {
	t.Parallel()
	for _, e := range []Encoding{EncodingFloat32, EncodingFloat16, EncodingUint8, EncodingBits} {
		for id := range 5 {
			for _, cols := range []int{1, 3, 4} {
				for _, rows := range [][]int{{1}, {2, 3}, {5, 5, 1}} {
					for _, bias := range []bool{true, false} {
						for _, labels := range []bool{true, false} {
							c := testChunkIn(e, 3, cols, rows...)
							c.RunID = "runid"[:id]
							if !bias {
								c.RBM, c.Bias = 0, nil // the master's data: no bias
							}
							if !labels {
								c.Labels = nil
							}
							b, err := Encode(c)
							if err != nil {
								t.Fatalf("%v, run id %q, %d cols, rows %v: %v", e, c.RunID, cols, rows, err)
							}
							if got := c.EncodedSize(); got != int64(len(b)) {
								t.Errorf("%v, run id %q, %d cols, rows %v, bias %t, labels %t: EncodedSize() = %d; Encode wrote %d bytes",
									e, c.RunID, cols, rows, bias, labels, got, len(b))
							}
						}
					}
				}
			}
		}
	}
}

// TestEncodeRounds checks that Encode of values not rounded beforehand
// rounds each to the nearest code, and never fails on them.
func TestEncodeRounds(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(9, 9))
	vals := []float32{-1, 2, float32(math.NaN()), float32(math.Inf(1)), 0.5, 1e-9, 70000}
	for range 50 {
		vals = append(vals, rng.Float32())
	}
	for _, e := range []Encoding{EncodingFloat16, EncodingUint8, EncodingBits} {
		c := &Chunk{RunID: "r", RBM: 1, Rows: 1, Cols: len(vals), Data: vals, BatchRows: []int{1}, Bias: make([]float32, len(vals)), Encoding: e}
		b, err := Encode(c)
		if err != nil {
			t.Fatalf("%v: %v", e, err)
		}
		m, err := Decode(b)
		if err != nil {
			t.Fatalf("%v: %v", e, err)
		}
		for i, x := range vals {
			if got, want := m.(*Chunk).Data[i], roundTo(e, x); math.Float32bits(got) != math.Float32bits(want) {
				t.Errorf("%v: value %g reads back as %g; want %g", e, x, got, want)
			}
		}
	}
}

// BenchmarkEncodings encodes and decodes (DecodeOwned, as a receiver does)
// the 10 MiB window of benchChunk, its values rounded to each encoding; the
// bytes per second count its float32 values.
func BenchmarkEncodings(b *testing.B) {
	for _, e := range []Encoding{EncodingFloat32, EncodingFloat16, EncodingUint8, EncodingBits} {
		c := benchChunk()
		c.Encoding = e
		for i, x := range c.Data {
			c.Data[i] = roundTo(e, x)
		}
		enc, err := Encode(c)
		if err != nil {
			b.Fatal(err)
		}
		b.Run("encode/"+e.String(), func(b *testing.B) {
			b.SetBytes(int64(4 * len(c.Data)))
			b.ReportAllocs()
			for b.Loop() {
				sinkBytes, _ = Encode(c)
			}
		})
		b.Run("decode/"+e.String(), func(b *testing.B) {
			b.SetBytes(int64(4 * len(c.Data)))
			b.ReportAllocs()
			owned := make([]byte, len(enc))
			for b.Loop() {
				copy(owned, enc) // DecodeOwned may keep it: a fresh copy each time
				if sinkMsg, err = DecodeOwned(owned); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
