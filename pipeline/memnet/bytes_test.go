package memnet

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/pipedbn/pipedbn/messages"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
)

// TestWindowBytes runs fault-free simulations and checks every RBM's
// BytesIn and BytesOut against the windows the network delivered: the
// wire length (what messages.Encode writes) of each window taken from
// below and sent above, once each, the last included; and so RBM_i's
// BytesOut is RBM_(i+1)'s BytesIn. With stage replicas an RBM's counts sum
// its replicas'.
func TestWindowBytes(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func() (protocol.MasterConfig, []string)
	}{{"one per rbm", func() (protocol.MasterConfig, []string) { return tiny(2) }}, {"replicas", tinyReplicas}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, slaves := tc.run()
			// The windows delivered, each once: by sender, receiver and
			// Seq on their link.
			type window struct {
				from, to string
				seq      uint64
			}
			wire := map[window]uint64{}
			net := New(cfg, slaves, Options{
				Timing: simTiming(), Simulated: true, Encode: true,
				Trace: func(format string, args ...any) {
					if !strings.HasSuffix(format, "deliver %s") {
						return
					}
					e := args[len(args)-1].(protocol.Envelope)
					if c, ok := e.Msg.(*messages.Chunk); ok {
						b, err := messages.Encode(c)
						if err != nil {
							t.Fatal(err)
						}
						wire[window{e.From, e.To, c.Seq}] = uint64(len(b))
					}
				},
			})
			got, err := net.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			// Each slave's windows in and out, summed by RBM: a slave is
			// named local-<rbm> or local-<rbm>-<replica>.
			rbmOf := func(name string) int {
				if name == protocol.MasterName {
					return 0
				}
				i, err := strconv.Atoi(strings.Split(strings.TrimPrefix(name, "local-"), "-")[0])
				if err != nil {
					t.Fatalf("slave %q: %v", name, err)
				}
				return i
			}
			in, out := make([]uint64, len(got)+1), make([]uint64, len(got)+1)
			windows := make([]int, len(got)+1)
			for w, n := range wire {
				out[rbmOf(w.from)] += n
				in[rbmOf(w.to)] += n
				windows[rbmOf(w.from)]++
			}
			for i, tr := range got {
				rbm := i + 1
				if uint64(tr.BytesIn) != in[rbm] || uint64(tr.BytesOut) != out[rbm] {
					t.Errorf("rbm %d: bytes in %d, out %d; want the %d and %d of the windows delivered (%d in, %d out)",
						rbm, tr.BytesIn, tr.BytesOut, in[rbm], out[rbm], windows[rbm-1], windows[rbm])
				}
				if rbm < len(got) && (tr.BytesOut == 0 || tr.BytesOut != got[rbm].BytesIn) {
					t.Errorf("rbm %d sent %d bytes, rbm %d took %d; want them equal, and some", rbm, tr.BytesOut, rbm+1, got[rbm].BytesIn)
				}
			}
			if got[len(got)-1].BytesOut != 0 {
				t.Errorf("the top rbm sent %d bytes; want 0", got[len(got)-1].BytesOut)
			}
		})
	}
}
