package natsnet

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats.go"

	"github.com/pipedbn/pipedbn/messages"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
)

// The link every TestBadInput case attacks: windows of 3 columns from RBM_1
// (slave s1) to slave s2.
const (
	badProducerName = "s1"
	badProducer     = 1
	badConsumerName = "s2"
	badCols         = 3
)

// badInputChunk is the good window each case publishes after its bad input:
// two mini-batches of 2 and 1 rows, 3 columns, with distinctive values.
func badInputChunk(run string) *messages.Chunk {
	return &messages.Chunk{
		RunID: run, RBM: badProducer, Epoch: 0, Seq: 0, FirstBatch: 0,
		Rows: 3, Cols: badCols,
		Data:      []float32{0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875, 1.125, 1.25},
		BatchRows: []int{2, 1},
		Bias:      []float32{-1.5, -2.5, -3.5},
	}
}

// badEncode encodes m; m must be valid.
func badEncode(t *testing.T, m messages.Message) []byte {
	t.Helper()
	b, err := messages.Encode(m)
	if err != nil {
		t.Fatalf("Encode(%T): %v", m, err)
	}
	return b
}

// badFrag wraps payload in one fragment, with a header written field by
// field as FragmentHeaderSize documents it: "PDBF" | version uint16 | 0
// uint16 | id uint64 | part index uint32 | part count uint32 | payload
// length uint32 | CRC-32C of the whole payload uint32, little-endian. TestBadInput checks
// that this agrees with messages.Split, so the cases below that forge a
// header field are forging today's layout.
func badFrag(payload []byte, id uint64, index, count, total uint32, sum uint32) []byte {
	h := make([]byte, 0, messages.FragmentHeaderSize+len(payload))
	h = append(h, "PDBF"...)
	h = binary.LittleEndian.AppendUint16(h, messages.Version)
	h = binary.LittleEndian.AppendUint16(h, 0)
	h = binary.LittleEndian.AppendUint64(h, id)
	h = binary.LittleEndian.AppendUint32(h, index)
	h = binary.LittleEndian.AppendUint32(h, count)
	h = binary.LittleEndian.AppendUint32(h, total)
	h = binary.LittleEndian.AppendUint32(h, sum)
	return append(h, payload...)
}

var badCastagnoli = crc32.MakeTable(crc32.Castagnoli)

// badWhole wraps payload in a single, well-formed fragment.
func badWhole(payload []byte, id uint64) []byte {
	return badFrag(payload, id, 0, 1, uint32(len(payload)), crc32.Checksum(payload, badCastagnoli))
}

// Offsets in an encoded message: "PDBN" | version uint16 | kind uint8 | body
// length uint32 | body | CRC-32C of all before it uint32.
const (
	badMsgVersion = 4
	badMsgKind    = 6
	badMsgLength  = 7
	badMsgHeader  = 11
)

// badReseal fixes the body length and checksum of an encoded message after
// its bytes were edited, so that only the edit is wrong.
func badReseal(b []byte) []byte {
	b = slices.Clone(b)
	binary.LittleEndian.PutUint32(b[badMsgLength:], uint32(len(b)-badMsgHeader-4))
	binary.LittleEndian.PutUint32(b[len(b)-4:], crc32.Checksum(b[:len(b)-4], badCastagnoli))
	return b
}

// badDropLast removes the last element of the float32 array vals, found by
// its length prefix and values, from the encoded message b, and reseals it.
func badDropLast(t *testing.T, b []byte, vals []float32) []byte {
	t.Helper()
	var pat []byte
	for _, v := range vals {
		pat = binary.LittleEndian.AppendUint32(pat, math.Float32bits(v))
	}
	at := bytes.Index(b, pat)
	if at < 0 || bytes.Index(b[at+1:], pat) >= 0 {
		t.Fatalf("array %v is not in the encoded message exactly once", vals)
	}
	// Its length prefix, then 0 to 3 zero bytes of padding (messages pads
	// float32 arrays to 4-byte offsets).
	prefix := -1
	for pad := 0; pad < 4 && prefix < 0; pad++ {
		c := at - pad - 4
		if c >= 0 && binary.LittleEndian.Uint32(b[c:]) == uint32(len(vals)) && bytes.Count(b[c+4:at], []byte{0}) == pad {
			prefix = c
		}
	}
	if prefix < 0 {
		t.Fatalf("array %v has no length prefix before it", vals)
	}
	out := slices.Clone(b[:prefix])
	out = binary.LittleEndian.AppendUint32(out, uint32(len(vals)-1))
	out = append(out, b[prefix+4:at]...)
	out = append(out, pat[:len(pat)-4]...)
	out = append(out, b[at+len(pat):]...)
	return badReseal(out)
}

// badEdit returns a copy of b with f applied.
func badEdit(b []byte, f func(b []byte) []byte) []byte { return f(slices.Clone(b)) }

// badCase is one bad wire input: the fragments published on the receiver's
// data subject, and what is wrong with them.
type badCase struct {
	name string
	// frags returns the bad input for a receiver of run run.
	frags func(t *testing.T, run string) [][]byte
	// want is the error a fresh Reassembler and Decode report for the input
	// (a check that the case breaks what it says it breaks), or nil for a
	// well-formed message that only the receiver's run, producer, width or
	// kind checks turn away.
	want error
}

func badCases() []badCase {
	one := func(f func(t *testing.T, run string) []byte) func(t *testing.T, run string) [][]byte {
		return func(t *testing.T, run string) [][]byte { return [][]byte{f(t, run)} }
	}
	// chunkFrag is the good chunk, encoded and in one fragment, with edit
	// applied to the fragment.
	chunkFrag := func(edit func(f []byte) []byte) func(t *testing.T, run string) [][]byte {
		return one(func(t *testing.T, run string) []byte {
			return badEdit(badWhole(badEncode(t, badInputChunk(run)), 7), edit)
		})
	}
	// chunkMsg is the good chunk, encoded, with edit applied to the message
	// bytes, then put in a well-formed fragment.
	chunkMsg := func(edit func(t *testing.T, b []byte) []byte) func(t *testing.T, run string) [][]byte {
		return one(func(t *testing.T, run string) []byte {
			return badWhole(edit(t, badEncode(t, badInputChunk(run))), 7)
		})
	}
	// msg is m, well formed, in one well-formed fragment.
	msg := func(m func(run string) messages.Message) func(t *testing.T, run string) [][]byte {
		return one(func(t *testing.T, run string) []byte { return badWhole(badEncode(t, m(run)), 7) })
	}
	chunk := func(edit func(c *messages.Chunk)) func(t *testing.T, run string) [][]byte {
		return msg(func(run string) messages.Message {
			c := badInputChunk(run)
			edit(c)
			return c
		})
	}
	return []badCase{
		// Fragments that are not fragments.
		{"garbage text", one(func(*testing.T, string) []byte {
			return []byte("this is not a pipedbn fragment, just text")
		}), messages.ErrMagic},
		{"random binary", one(func(*testing.T, string) []byte {
			rng := rand.New(rand.NewPCG(7, 7))
			b := make([]byte, 300)
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
			return b
		}), messages.ErrMagic},
		{"empty message", one(func(*testing.T, string) []byte { return []byte{} }), messages.ErrTruncated},
		{"shorter than the fragment header", chunkFrag(func(f []byte) []byte { return f[:messages.FragmentHeaderSize-10] }), messages.ErrTruncated},
		{"bad fragment magic", chunkFrag(func(f []byte) []byte { copy(f, "PDBX"); return f }), messages.ErrMagic},
		{"fragment version from the future", chunkFrag(func(f []byte) []byte {
			binary.LittleEndian.PutUint16(f[4:], messages.Version+1)
			return f
		}), messages.ErrVersion},
		{"fragment version zero", chunkFrag(func(f []byte) []byte {
			binary.LittleEndian.PutUint16(f[4:], 0)
			return f
		}), messages.ErrVersion},
		{"truncated fragment", chunkFrag(func(f []byte) []byte { return f[:len(f)-7] }), messages.ErrFragment},
		{"fragment with trailing bytes", chunkFrag(func(f []byte) []byte { return append(f, 1, 2, 3) }), messages.ErrFragment},
		{"fragment part index beyond its count", chunkFrag(func(f []byte) []byte {
			binary.LittleEndian.PutUint32(f[16:], 1) // part 1 of 1
			return f
		}), messages.ErrFragment},
		{"fragment of zero parts", chunkFrag(func(f []byte) []byte {
			binary.LittleEndian.PutUint32(f[20:], 0)
			return f
		}), messages.ErrFragment},
		{"fragment header padding not zero", chunkFrag(func(f []byte) []byte {
			binary.LittleEndian.PutUint16(f[6:], 1)
			return f
		}), messages.ErrFragment},
		{"fragment claims an oversize total", one(func(*testing.T, string) []byte {
			// Part 0 of 3,145,728 parts of 100 bytes: a consistent
			// fragment of a 300 MiB message, over the 256 MiB limit.
			return badFrag(make([]byte, 100), 7, 0, 3145728, 300<<20, 0)
		}), messages.ErrTooLarge},
		{"fragment checksum mismatch", chunkFrag(func(f []byte) []byte {
			f[len(f)-1] ^= 0x40 // a payload byte: the fragment's CRC no longer matches
			return f
		}), messages.ErrChecksum},
		{"fragment disagrees with an earlier part", func(t *testing.T, run string) [][]byte {
			b := badEncode(t, badInputChunk(run))
			parts := messages.Split(b, messages.FragmentHeaderSize+len(b)/2+1, 9)
			if len(parts) != 2 {
				t.Fatalf("split into %d parts; want 2", len(parts))
			}
			// The second part claims another checksum than the first.
			binary.LittleEndian.PutUint32(parts[1][28:], binary.LittleEndian.Uint32(parts[1][28:])+1)
			return parts
		}, messages.ErrFragment},

		// Messages that do not decode.
		{"bad message magic", chunkMsg(func(t *testing.T, b []byte) []byte { copy(b, "PDBX"); return badReseal(b) }), messages.ErrMagic},
		{"message version from the future", chunkMsg(func(t *testing.T, b []byte) []byte {
			binary.LittleEndian.PutUint16(b[badMsgVersion:], messages.Version+1)
			return badReseal(b)
		}), messages.ErrVersion},
		{"message checksum mismatch", chunkMsg(func(t *testing.T, b []byte) []byte {
			b[badMsgHeader+5] ^= 0x01
			return b
		}), messages.ErrChecksum},
		{"message truncated", chunkMsg(func(t *testing.T, b []byte) []byte { return b[:len(b)-9] }), messages.ErrTruncated},
		{"message with trailing bytes", chunkMsg(func(t *testing.T, b []byte) []byte { return append(b, 0, 0, 0, 0) }), messages.ErrTrailing},
		{"message body ends early", chunkMsg(func(t *testing.T, b []byte) []byte {
			return badReseal(append(b[:len(b)-4-12], b[len(b)-4:]...)) // its last 3 floats cut
		}), messages.ErrTruncated},
		{"unknown message kind", chunkMsg(func(t *testing.T, b []byte) []byte { b[badMsgKind] = 0xee; return badReseal(b) }), messages.ErrKind},
		{"message kind zero", chunkMsg(func(t *testing.T, b []byte) []byte { b[badMsgKind] = 0; return badReseal(b) }), messages.ErrKind},
		{"chunk data shorter than rows x cols", chunkMsg(func(t *testing.T, b []byte) []byte {
			return badDropLast(t, b, badInputChunk("").Data)
		}), messages.ErrShape},
		{"chunk bias shorter than cols", chunkMsg(func(t *testing.T, b []byte) []byte {
			return badDropLast(t, b, badInputChunk("").Bias)
		}), messages.ErrShape},

		// Well-formed messages that are not windows of this link.
		{"chunk of another run", chunk(func(c *messages.Chunk) { c.RunID += "-other" }), nil},
		{"chunk from another producer index", chunk(func(c *messages.Chunk) { c.RBM = badProducer + 1 }), nil},
		{"chunk of the master's data on a slave's link", chunk(func(c *messages.Chunk) { c.RBM, c.Bias = 0, nil }), nil},
		{"chunk of the wrong width", chunk(func(c *messages.Chunk) {
			c.Cols, c.Rows, c.BatchRows = 4, 2, []int{2}
			c.Data, c.Bias = c.Data[:8], []float32{1, 2, 3, 4}
		}), nil},
		{"credit on the data subject", msg(func(run string) messages.Message {
			return &messages.Credit{RunID: run, RBM: badProducer, UpTo: 4}
		}), nil},
		{"status on the data subject", msg(func(run string) messages.Message {
			return &messages.Status{RunID: run, RBM: badProducer, Slave: badProducerName, State: messages.StateTraining}
		}), nil},
		{"register on the data subject", msg(func(run string) messages.Message {
			return &messages.Register{Name: badProducerName, Host: "h", CPUs: 1, PID: 1, Protocol: messages.Version}
		}), nil},
		{"end of stream of another run", msg(func(run string) messages.Message {
			return &messages.EndOfStream{RunID: run + "-other", RBM: badProducer, Windows: 0}
		}), nil},
		{"end of stream from another producer", msg(func(run string) messages.Message {
			return &messages.EndOfStream{RunID: run, RBM: badProducer + 1, Windows: 0}
		}), nil},
	}
}

// badOffline runs frags through a fresh Reassembler and Decode and returns
// the first error.
func badOffline(frags [][]byte) error {
	r := messages.NewReassembler(messages.ReassemblerConfig{})
	for _, f := range frags {
		payload, err := r.Add(f)
		if err != nil {
			return err
		}
		if payload != nil {
			_, err := messages.Decode(payload)
			return err
		}
	}
	return errors.New("no message completed")
}

// TestBadInput publishes bad wire input on a Receiver's data subject, then a
// good window: the receiver must not panic or fail, must count the bad input
// as rejected, and must still return the good window intact.
func TestBadInput(t *testing.T) {
	srv, err := StartEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)

	// The forged headers below follow the layout badFrag writes; it must be
	// the one Split writes.
	probe := []byte("probe payload")
	if got, want := badWhole(probe, 42), messages.Split(probe, 1024, 42)[0]; !bytes.Equal(got, want) {
		t.Fatalf("fragment layout changed: forged %x, Split %x; update badFrag", got, want)
	}
	enc := badEncode(t, badInputChunk("probe"))
	if got := badReseal(enc); !bytes.Equal(got, enc) {
		t.Fatalf("message layout changed: resealed %x, Encode %x; update badReseal", got, enc)
	}

	cases := badCases()
	t.Logf("%d bad wire inputs", len(cases))
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			run := fmt.Sprintf("bad-%02d", i)
			frags := tc.frags(t, run)
			// The input breaks what the case says it breaks.
			err := badOffline(frags)
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("offline: the input fails with %v; want %v", err, tc.want)
			}
			if tc.want == nil && err != nil {
				t.Fatalf("offline: the input fails with %v; want a well-formed message", err)
			}

			nc, err := nats.Connect(srv.URL())
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			// The receiving end of a slave: its endpoint, and the consumer
			// of its input link.
			ep := newEndpoint(nc, badConsumerName, hclog.NewNullLogger())
			defer ep.close()
			subject := dataSubject(run, badProducerName, badConsumerName)
			// Its windows of up to 3 rows of badCols values, as a slave's
			// Assign bounds them.
			if err := ep.subscribe(subject, windows, windows.limits(messages.Shape{Visible: badCols, WindowRows: 3})); err != nil {
				t.Fatal(err)
			}
			c := protocol.NewConsumer(protocol.Run{ID: run}, badConsumerName, badProducerName, badProducer, badCols, 4, 0, false,
				protocol.DefaultTiming(time.Second, time.Second))
			for _, f := range frags {
				if err := nc.Publish(subject, f); err != nil {
					t.Fatal(err)
				}
			}
			good := badInputChunk(run)
			// The good window in small fragments, under another id.
			parts, err := messages.EncodeParts(good, messages.FragmentHeaderSize+40, 1<<40)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range parts {
				if err := nc.Publish(subject, p); err != nil {
					t.Fatal(err)
				}
			}
			if err := nc.Flush(); err != nil {
				t.Fatal(err)
			}

			timeout := time.After(20 * time.Second)
			for !c.Ready() {
				select {
				case d := <-ep.in.C:
					ep.in.Take(d)
					func() {
						defer func() {
							if p := recover(); p != nil {
								t.Fatalf("the consumer panicked: %v", p)
							}
						}()
						switch m := d.Env.Msg.(type) {
						case nil:
							c.Reject(d.Reason)
						case *messages.Chunk:
							c.OnChunk(ep.Now(), d.Env.From, m)
						case *messages.EndOfStream:
							c.OnEnd(ep.Now(), d.Env.From, m)
						default:
							t.Errorf("a %s came through on a data subject", m.Kind())
						}
					}()
				case <-timeout:
					t.Fatalf("the good window did not come after the bad input (rejected: %v)", c.Stats().Rejected)
				}
			}
			win := c.Take()
			w := &windowCopy{win.Epoch, win.Seq, slices.Clone(win.Rows), slices.Clone(win.X), slices.Clone(win.Bias)}
			want := windowCopy{good.Epoch, int(good.Seq), good.BatchRows, good.Data, good.Bias}
			if w.epoch != want.epoch || w.seq != want.seq || !slices.Equal(w.rows, want.rows) ||
				!slices.Equal(w.x, want.x) || !slices.Equal(w.bias, want.bias) {
				t.Errorf("Recv = %+v; want the good window %+v", *w, want)
			}
			rej := c.Stats().Rejected
			if rej.Total() < 1 {
				t.Errorf("rejected %v; want the bad input counted", rej)
			}
			if rej[messages.RejectDuplicate] != 0 {
				t.Errorf("rejected %v; want no duplicates", rej)
			}
		})
	}
}

// windowCopy is what TestBadInput compares of a received window.
type windowCopy struct {
	epoch, seq int
	rows       []int
	x, bias    []float32
}
