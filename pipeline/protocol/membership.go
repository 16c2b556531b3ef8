package protocol

import (
	"fmt"
	"slices"
	"time"

	"github.com/pipedbn/pipedbn/messages"
)

// Membership: who may join the run, and as what. A slave is a name and the
// process that holds it (messages.Register.Process). Until L slaves have
// joined, every valid registration is one of them; then a registration
// takes the RBM of a lost slave, or waits as a spare (at most L) that takes
// over the next one lost; the rest are told the cluster is full. A name
// held by a live process is refused to any other process of that name (two
// slaves started with one --name); a new process of a name whose holder
// fell silent takes its place (a restarted slave).
//
// A registration's name is its sender's (Envelope.From), or it is refused
// unanswered and counted as foreign: where the transport knows who sent it
// (natsnet on a secured server, whose identities may each register on a
// subject of their own name only), one identity can hold no name but its
// own, take no other slave's seat and lock no other slave out. Where it
// cannot tell (an open server), the sender names itself, and anyone may
// register under any name.

// joined is a slave process that registered.
type joined struct {
	name, host string
	cpus, pid  int
	process    uint64
	seen       time.Duration // its latest registration
}

func joinedOf(now time.Duration, reg *messages.Register) joined {
	return joined{reg.Name, reg.Host, reg.CPUs, reg.PID, reg.Process, now}
}

// known reports whether name has registered with this master.
func (m *Master) known(name string) bool {
	for _, j := range m.joined {
		if j.name == name {
			return true
		}
	}
	return false
}

// inUse is how recently a process must have been heard from to hold its
// name against another process: a few of its registrations or reports.
func (m *Master) inUse() time.Duration {
	t := m.cfg.Timing
	return 3 * max(t.RegisterEvery, t.StatusEvery)
}

// register answers a registration from sender from.
func (m *Master) register(now time.Duration, from string, reg *messages.Register) {
	if from != reg.Name {
		m.impostor(from, reg)
		return
	}
	answer := func(o messages.Outcome, reason string) {
		m.send(reg.Name, &messages.Admission{Slave: reg.Name, Outcome: o, Reason: reason, Process: reg.Process})
	}
	if reg.Protocol != messages.Version {
		answer(messages.Refused, fmt.Sprintf("protocol version %d, the master speaks %d", reg.Protocol, messages.Version))
		return
	}
	if err := CheckName(reg.Name); err != nil {
		answer(messages.Refused, err.Error())
		return
	}
	if m.phase != gathering && m.phase != running {
		answer(messages.Full, "")
		return
	}
	if h := m.holder(reg.Name); h != nil {
		switch {
		case h.process == reg.Process:
			h.seen = now
			answer(messages.Admitted, "") // a repeated registration
			m.reassign(reg.Name)
		case now-m.lastHeard(h) < m.inUse():
			answer(messages.InUse, fmt.Sprintf("slave %s is in the run already, on host %s (pid %d), and was heard %s ago: give every slave a name of its own",
				reg.Name, h.host, h.pid, (now-m.lastHeard(h)).Round(time.Millisecond)))
		default:
			m.log.Warn("a new process took a silent slave's name", "slave", reg.Name, "host", reg.Host, "pid", reg.PID, "silent", (now - m.lastHeard(h)).Round(time.Millisecond))
			answer(messages.Admitted, "")
			m.takeName(now, h, reg)
		}
		return
	}
	switch v := m.vacancyFor(reg.Name); {
	case m.phase == gathering && len(m.joined) < m.slaves:
		m.join(now, reg)
		answer(messages.Admitted, "")
		m.log.Info("slave joined", "slave", reg.Name, "host", reg.Host, "cpus", reg.CPUs, "joined", len(m.joined), "want", m.slaves)
		m.maybeRun(now)
	case m.phase == running && v != nil:
		m.join(now, reg)
		answer(messages.Admitted, "")
		m.log.Info("replacement joined", "slave", reg.Name, "host", reg.Host, "rbm", v.at.RBM, "replica", v.at.Replica)
		m.replace(now, v, reg.Name)
	case len(m.spares) < m.slaves:
		m.spares = append(m.spares, joinedOf(now, reg))
		answer(messages.Admitted, "")
		m.log.Info("spare joined: it takes over from the next slave lost", "slave", reg.Name, "host", reg.Host, "spares", len(m.spares))
	default:
		answer(messages.Full, "")
	}
}

// impostor refuses a registration under a name that is not its sender's:
// no answer, which would reach the slave of that name rather than the
// sender. It is counted as foreign, and logged at the 1st, 2nd, 4th, 8th...
// of them, since one sender may send them as fast as it can.
func (m *Master) impostor(from string, reg *messages.Register) {
	m.rejected.Add(messages.RejectForeign)
	m.impostors++
	if m.impostors&(m.impostors-1) == 0 {
		m.log.Warn("refused a registration under a name not its sender's", "sender", from, "name", reg.Name, "host", reg.Host, "pid", reg.PID, "refused", m.impostors)
	}
}

func (m *Master) join(now time.Duration, reg *messages.Register) {
	m.joined = append(m.joined, joinedOf(now, reg))
	if m.cfg.Observer.Joined != nil {
		m.cfg.Observer.Joined(reg.Name, reg.Host, reg.CPUs)
	}
}

// holder returns the registration of the process that holds name now: one
// of the slaves gathered, the slave of an RBM (or its replacement), or a
// spare; nil if none does.
func (m *Master) holder(name string) *joined {
	for k := range m.spares {
		if m.spares[k].name == name {
			return &m.spares[k]
		}
	}
	if m.phase == gathering {
		for k := range m.joined {
			if m.joined[k].name == name {
				return &m.joined[k]
			}
		}
		return nil
	}
	if slices.ContainsFunc(m.all(), func(s *seat) bool { return (s.lost == nil && s.slave == name) || s.replacement == name }) {
		return m.latest(name)
	}
	return nil
}

// latest returns the latest registration of name.
func (m *Master) latest(name string) *joined {
	for k := len(m.joined) - 1; k >= 0; k-- {
		if m.joined[k].name == name {
			return &m.joined[k]
		}
	}
	return nil
}

// lastHeard returns when the process h was last heard from: its latest
// registration, or the latest report of the RBM it trains.
func (m *Master) lastHeard(h *joined) time.Duration {
	heard := h.seen
	if m.phase == running {
		m.each(func(s *seat) {
			if s.lost == nil && s.slave == h.name && s.process.process == h.process {
				heard = max(heard, s.seen)
			}
		})
	}
	return heard
}

// takeName gives name to a new process, its holder h being silent: before
// the run, or as a spare, it simply takes h's place; the slave of an RBM is
// lost, and the new process takes over its RBM at once.
func (m *Master) takeName(now time.Duration, h *joined, reg *messages.Register) {
	if m.phase == gathering || slices.ContainsFunc(m.spares, func(j joined) bool { return j.name == reg.Name }) {
		*h = joinedOf(now, reg)
		return
	}
	for _, s := range m.all() {
		switch {
		case s.replacement == reg.Name:
			*h = joinedOf(now, reg) // it takes over once the checkpoint loads
			return
		case s.lost == nil && s.slave == reg.Name:
			if s.weights != nil || m.weights[s.at.RBM] != nil {
				*h = joinedOf(now, reg) // its part is trained: nothing to take over
				return
			}
			m.restart(now, s, reg)
			return
		}
	}
}

// restart hands seat s to the new process of its slave's name.
func (m *Master) restart(now time.Duration, s *seat, reg *messages.Register) {
	if m.cfg.CheckpointEvery <= 0 {
		m.Abort(now, fmt.Errorf("%w: slave %s (%s) restarted, and without checkpoints (reliability.checkpoint_every = 0) it cannot resume", ErrSlaveLost, reg.Name, m.where(s.at)))
		return
	}
	m.log.Warn("slave restarted", "slave", reg.Name, "rbm", s.at.RBM, "replica", s.at.Replica)
	m.lose(now, s, false)
	m.join(now, reg)
	m.replace(now, s, reg.Name)
}

// relink tells the slave of seat s its new neighbours. One that has not
// reported since it was assigned to resume gets the whole assignment again,
// with its checkpoint: its first may have been lost, and a bare relink
// would start it from scratch.
func (m *Master) relink(s *seat) {
	a := m.assignment(s)
	if s.confirmed || s.from == nil {
		m.send(s.slave, a)
		return
	}
	a.Resume = true
	m.send(s.slave, a)
	m.send(s.slave, s.from)
}

// reassign repeats the assignment of a slave that registers again before
// it reported: the assignment, or its checkpoint, was lost on the way.
func (m *Master) reassign(name string) {
	if m.phase != running {
		return
	}
	for _, s := range m.all() {
		if s.lost == nil && s.slave == name && s.assigned && !s.confirmed {
			a := m.assignment(s)
			a.Resume = s.from != nil
			m.send(name, a)
			if s.from != nil {
				m.send(name, s.from)
			}
		}
	}
}

// vacancyFor returns the vacant seat a replacement named name takes: the
// one it was lost from, if any, else the first; nil if none is vacant.
func (m *Master) vacancyFor(name string) *seat {
	var pick *seat
	m.each(func(s *seat) {
		if s.lost != nil && s.replacement == "" && (pick == nil || s.lost.lost == name) {
			pick = s
		}
	})
	return pick
}

// takeSpare hands the vacant seat s to the first spare still heard from,
// if there is one, and reports whether there was.
func (m *Master) takeSpare(now time.Duration, s *seat) bool {
	for len(m.spares) > 0 {
		sp := m.spares[0]
		m.spares = m.spares[1:]
		if now-sp.seen >= m.inUse() {
			continue // gone
		}
		m.joined = append(m.joined, sp)
		if m.cfg.Observer.Joined != nil {
			m.cfg.Observer.Joined(sp.name, sp.host, sp.cpus)
		}
		m.log.Info("a spare takes over", "slave", sp.name, "rbm", s.at.RBM, "replica", s.at.Replica)
		m.replace(now, s, sp.name)
		return true
	}
	return false
}

// stopSpares tells the spares that the run needs them no more.
func (m *Master) stopSpares(reason string) {
	for _, sp := range m.spares {
		m.send(sp.name, &messages.Stop{RunID: m.cfg.Run.ID, Incarnation: m.cfg.Run.Incarnation, Reason: reason, Process: sp.process})
	}
	m.spares = nil
}
