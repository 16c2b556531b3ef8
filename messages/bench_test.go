package messages

import "testing"

// Sinks keep the compiler from optimizing benchmarked calls away.
var (
	sinkBytes []byte
	sinkMsg   Message
)

// benchChunk returns the window of a K=10, B=256, H=1024 slave: 2560 x 1024
// float32, 10 MiB.
func benchChunk() *Chunk {
	batches := make([]int, 10)
	for i := range batches {
		batches[i] = 256
	}
	return testChunk(1, 1024, batches...)
}

func BenchmarkEncodeChunk(b *testing.B) {
	c := benchChunk()
	b.SetBytes(int64(4 * len(c.Data)))
	b.ReportAllocs()
	for b.Loop() {
		sinkBytes, _ = Encode(c)
	}
}

func BenchmarkDecodeChunk(b *testing.B) {
	c := benchChunk()
	enc, err := Encode(c)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(4 * len(c.Data)))
	b.ReportAllocs()
	for b.Loop() {
		sinkMsg, err = Decode(enc)
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSendChunk is the whole path of a window: encode, split into
// 1 MiB parts, reassemble, decode.
func BenchmarkSendChunk(b *testing.B) {
	c := benchChunk()
	b.SetBytes(int64(4 * len(c.Data)))
	b.ReportAllocs()
	var r Reassembler
	var id uint64
	for b.Loop() {
		id++
		parts, err := EncodeParts(c, DefaultMaxPart, id)
		if err != nil {
			b.Fatal(err)
		}
		var payload []byte
		for _, p := range parts {
			if payload, err = r.Add(p); err != nil {
				b.Fatal(err)
			}
		}
		if sinkMsg, err = Decode(payload); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReceiveChunk is a receiver's share of BenchmarkSendChunk: 1 MiB
// parts reassembled and decoded, by Add and Decode (a second checksum
// pass, a copy of the data), or by AddMessage, as an endpoint receives;
// and the window in one part (the local NATS server takes 8 MiB), which
// AddMessage decodes in place.
func BenchmarkReceiveChunk(b *testing.B) {
	c := benchChunk()
	parts, err := EncodeParts(c, DefaultMaxPart, 1)
	if err != nil {
		b.Fatal(err)
	}
	whole, err := EncodeParts(c, 16<<20, 1)
	if err != nil {
		b.Fatal(err)
	}
	for _, bench := range []struct {
		name  string
		owned bool
		parts [][]byte
	}{{"Add+Decode", false, parts}, {"AddMessage", true, parts}, {"AddMessage/one-part", true, whole}} {
		owned, parts := bench.owned, bench.parts
		b.Run(bench.name, func(b *testing.B) {
			b.SetBytes(int64(4 * len(c.Data)))
			b.ReportAllocs()
			for b.Loop() {
				var r Reassembler // a fresh one: the parts' id is new to it
				for _, p := range parts {
					if owned {
						sinkMsg, _, err = r.AddMessage(p)
					} else if sinkBytes, err = r.Add(p); sinkBytes != nil && err == nil {
						sinkMsg, err = Decode(sinkBytes)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				if sinkMsg == nil {
					b.Fatal("no message")
				}
			}
		})
	}
}

// BenchmarkEncodeEachChunk is a sender's share of BenchmarkSendChunk the
// way an endpoint sends: EncodeEach into 1 MiB parts, each copied once, as
// nats.Conn.Publish copies it into its write buffer.
func BenchmarkEncodeEachChunk(b *testing.B) {
	c := benchChunk()
	b.SetBytes(int64(4 * len(c.Data)))
	b.ReportAllocs()
	wire := make([]byte, 0, DefaultMaxPart)
	var id uint64
	for b.Loop() {
		id++
		err := EncodeEach(c, DefaultMaxPart, id, func(part []byte) error {
			wire = append(wire[:0], part...)
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSendEachChunk is BenchmarkSendChunk the way an endpoint sends:
// each fragment goes from EncodeEach straight to the Reassembler.
func BenchmarkSendEachChunk(b *testing.B) {
	c := benchChunk()
	b.SetBytes(int64(4 * len(c.Data)))
	b.ReportAllocs()
	var r Reassembler
	var id uint64
	for b.Loop() {
		id++
		var payload []byte
		err := EncodeEach(c, DefaultMaxPart, id, func(part []byte) error {
			p, err := r.Add(part)
			if p != nil {
				payload = p
			}
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
		if sinkMsg, err = Decode(payload); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodePartsChunk is BenchmarkEncodeEachChunk with EncodeParts:
// the parts made first, then each copied once.
func BenchmarkEncodePartsChunk(b *testing.B) {
	c := benchChunk()
	b.SetBytes(int64(4 * len(c.Data)))
	b.ReportAllocs()
	wire := make([]byte, 0, DefaultMaxPart)
	var id uint64
	for b.Loop() {
		id++
		parts, err := EncodeParts(c, DefaultMaxPart, id)
		if err != nil {
			b.Fatal(err)
		}
		for _, part := range parts {
			wire = append(wire[:0], part...)
		}
	}
}
