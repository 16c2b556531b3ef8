package protocol

import (
	"time"

	"github.com/pipedbn/pipedbn/messages"
)

// The slave's status reports, its heartbeat: what the master learns of
// its RBM between checkpoints.

// bytes returns the bytes of the windows the slave accepted from below and
// sent above (LinkStats.Bytes): what its Status and Weights report.
func (s *Slave) bytes() (in, out uint64) {
	return s.InputStats().Bytes, s.OutputStats().Bytes
}

// report sends the slave's status: its heartbeat.
func (s *Slave) report(now time.Duration) {
	s.lastSent = now
	st := s.stats
	in, out := s.bytes()
	m := &messages.Status{
		RunID: s.run.ID, Incarnation: s.run.Incarnation, RBM: s.assign.RBM, Replica: s.assign.Replica, Slave: s.cfg.Name, Process: s.cfg.Process, State: WireState(s.state),
		Epoch: st.Epoch, Batches: st.Batches, ReconError: st.LastRecon, ReconErrors: st.Recon,
		BusySeconds: st.Busy.Seconds(), WaitSeconds: (st.WaitInput + st.WaitCredit).Seconds(),
		BytesIn: in, BytesOut: out,
	}
	if s.in != nil {
		m.Rejected = s.in.Stats().Rejected
		m.Upstream = s.assign.Upstream
	}
	if s.down != nil {
		m.Downstream = s.assign.Downstream
	}
	s.send(MasterName, m)
}
