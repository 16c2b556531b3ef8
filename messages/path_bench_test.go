package messages

import (
	"hash/crc32"
	"testing"
)

// pathChunk returns the window of the equal layers' slave: K = 8
// mini-batches of 256 rows of 784 values, 6.4 MB of float32.
func pathChunk() *Chunk {
	return testChunk(1, 784, 256, 256, 256, 256, 256, 256, 256, 256)
}

// pathChunkUint8 is pathChunk's window as a stage sends it under the
// default middle precision: its values rounded to uint8 codes and sent so
// (Chunk.Encoding), 1.6 MB.
func pathChunkUint8() *Chunk {
	return testChunkIn(EncodingUint8, 1, 784, 256, 256, 256, 256, 256, 256, 256, 256)
}

// The parts a window travels in: one, as the local NATS server's 8 MiB
// max_payload carries it, or 1 MiB ones, a default server's.
var pathParts = []struct {
	name    string
	maxPart int
}{{"one-part", 8 << 20}, {"1MiB-parts", DefaultMaxPart}}

// BenchmarkWindowPath measures each step of a slave's message path on one
// window, so that a profile's share of each can be told apart: the floors
// (a copy between warm buffers, a CRC-32C pass), the receive (a copy of
// each part into fresh memory, as nats.go's parser does, then reassembly
// and the decode into a message), and the send (EncodeEach, each part
// copied into a reused buffer, as nats.Conn.Publish copies it). The
// receive, reassemble+decode and encode+fragment steps run again on the
// window in uint8 (the default middle precision), named .../uint8/PARTS;
// their bytes are that window's own encoded length.
func BenchmarkWindowPath(b *testing.B) {
	c := pathChunk()
	enc, err := Encode(c)
	if err != nil {
		b.Fatal(err)
	}
	size := int64(len(enc))
	b.Run("floor/copy", func(b *testing.B) {
		dst := make([]byte, len(enc))
		b.SetBytes(size)
		b.ReportAllocs()
		for b.Loop() {
			copy(dst, enc)
		}
	})
	b.Run("floor/crc32c", func(b *testing.B) {
		b.SetBytes(size)
		b.ReportAllocs()
		for b.Loop() {
			sinkSum = crc32.Checksum(enc, castagnoli)
		}
	})
	b.Run("decode/copy", func(b *testing.B) {
		b.SetBytes(size)
		b.ReportAllocs()
		for b.Loop() {
			if sinkMsg, err = Decode(enc); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode/owned", func(b *testing.B) {
		b.SetBytes(size)
		b.ReportAllocs()
		for b.Loop() {
			if sinkMsg, err = DecodeOwned(enc); err != nil {
				b.Fatal(err)
			}
		}
	})
	benchPathSteps(b, c, "", size)
	u := pathChunkUint8()
	encU, err := Encode(u)
	if err != nil {
		b.Fatal(err)
	}
	benchPathSteps(b, u, "uint8/", int64(len(encU)))
}

// benchPathSteps runs the receive, reassemble+decode and encode+fragment
// steps of BenchmarkWindowPath on window c, named STEP/INFIXPARTS, each
// setting size bytes.
func benchPathSteps(b *testing.B, c *Chunk, infix string, size int64) {
	for _, pp := range pathParts {
		parts, err := EncodeParts(c, pp.maxPart, 1)
		if err != nil {
			b.Fatal(err)
		}
		b.Run("receive/"+infix+pp.name, func(b *testing.B) {
			benchReceive(b, parts, size, true)
		})
		b.Run("reassemble+decode/"+infix+pp.name, func(b *testing.B) {
			benchReceive(b, parts, size, false)
		})
		b.Run("encode+fragment/"+infix+pp.name, func(b *testing.B) {
			wire := make([]byte, 0, pp.maxPart)
			b.SetBytes(size)
			b.ReportAllocs()
			var id uint64
			for b.Loop() {
				id++
				err := EncodeEach(c, pp.maxPart, id, func(part []byte) error {
					wire = append(wire[:0], part...)
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// benchReceive takes parts into a fresh Reassembler each round, as
// AddMessage: with copy, each part first copied into fresh memory, as a
// NATS subscription hands it over; without, the parts as they are, for the
// reassembly and decode alone.
func benchReceive(b *testing.B, parts [][]byte, size int64, fresh bool) {
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		var r Reassembler
		var m Message
		for _, p := range parts {
			if fresh {
				p = append(make([]byte, 0, len(p)), p...)
			}
			got, _, err := r.AddMessage(p)
			if err != nil {
				b.Fatal(err)
			}
			if got != nil {
				m = got
			}
		}
		if m == nil {
			b.Fatal("no message")
		}
		sinkMsg = m
	}
}

var sinkSum uint32
