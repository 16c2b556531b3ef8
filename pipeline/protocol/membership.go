package protocol

import (
	"fmt"
	"time"

	"github.com/pipedbn/pipedbn/messages"
)

// Membership: who may join the run, and as what. Until L slaves have
// joined, every valid registration is one of them; then only a
// replacement of a lost slave is taken (or a new process of a current
// slave's name, which replaces its old one at once); the rest are told the
// cluster is full.

// known reports whether name has registered with this master.
func (m *Master) known(name string) bool {
	for _, j := range m.joined {
		if j.name == name {
			return true
		}
	}
	return false
}

// register answers a registration: until L slaves have joined (Lens's
// waitForClients), then from replacements of lost slaves.
func (m *Master) register(now time.Duration, from string, reg *messages.Register) {
	answer := func(o messages.Outcome, reason string) {
		m.send(reg.Name, &messages.Admission{Slave: reg.Name, Outcome: o, Reason: reason})
	}
	if reg.Protocol != messages.Version {
		answer(messages.Refused, fmt.Sprintf("protocol version %d, the master speaks %d", reg.Protocol, messages.Version))
		return
	}
	if err := CheckName(reg.Name); err != nil {
		answer(messages.Refused, err.Error())
		return
	}
	if i := m.restarted(reg); i > 0 {
		answer(messages.Admitted, "")
		m.restart(now, i, reg)
		return
	}
	if m.current(reg.Name) {
		answer(messages.Admitted, "") // a repeated registration
		m.reassign(reg.Name)
		return
	}
	switch m.phase {
	case gathering:
		if len(m.joined) >= m.L {
			answer(messages.Full, "")
			return
		}
		m.join(reg)
		answer(messages.Admitted, "")
		m.log.Info("slave joined", "slave", reg.Name, "host", reg.Host, "cpus", reg.CPUs, "joined", len(m.joined), "want", m.L)
		m.maybeRun(now)
	case running:
		i := m.vacancyFor(reg.Name)
		if i == 0 {
			answer(messages.Full, "")
			return
		}
		m.join(reg)
		answer(messages.Admitted, "")
		m.log.Info("replacement joined", "slave", reg.Name, "host", reg.Host, "rbm", i)
		m.replace(now, i, reg.Name)
	default:
		answer(messages.Full, "")
	}
}

func (m *Master) join(reg *messages.Register) {
	m.joined = append(m.joined, joined{reg.Name, reg.Host, reg.CPUs, reg.PID})
	if m.cfg.Observer.Joined != nil {
		m.cfg.Observer.Joined(reg.Name, reg.Host, reg.CPUs)
	}
}

// restarted returns the RBM of the slave whose name a new process
// registers under once the run is on: the earlier process is lost, and the
// new one takes over its RBM at once (restart). Before the run starts, the
// new process simply replaces the earlier one.
func (m *Master) restarted(reg *messages.Register) int {
	if m.phase == gathering {
		for k, j := range m.joined {
			if j.name == reg.Name && (j.host != reg.Host || j.pid != reg.PID) {
				m.joined[k] = joined{reg.Name, reg.Host, reg.CPUs, reg.PID}
			}
		}
		return 0
	}
	for i := 1; i <= m.L; i++ {
		s := m.seats[i]
		if m.phase == running && s.lost == nil && s.slave == reg.Name && (s.process.host != reg.Host || s.process.pid != reg.PID) {
			return i
		}
	}
	return 0
}

// restart hands RBM i to the new process of its slave's name.
func (m *Master) restart(now time.Duration, i int, reg *messages.Register) {
	if m.cfg.CheckpointEvery <= 0 {
		m.Abort(now, fmt.Errorf("%w: slave %s (rbm %d) restarted, and without checkpoints (reliability.checkpoint_every = 0) it cannot resume", ErrSlaveLost, reg.Name, i))
		return
	}
	m.log.Warn("slave restarted", "slave", reg.Name, "rbm", i)
	m.lose(now, i, false)
	m.join(reg)
	m.replace(now, i, reg.Name)
}

// reassign repeats the assignment of a slave that registers again before
// it reported: the assignment, or its checkpoint, was lost on the way.
func (m *Master) reassign(name string) {
	for i := 1; i <= m.L; i++ {
		if s := m.seats[i]; s.lost == nil && s.slave == name && s.assigned && !s.confirmed {
			a := m.assignment(i)
			a.Resume = s.from != nil
			m.send(name, a)
			if s.from != nil {
				m.send(name, s.from)
			}
		}
	}
}

// current reports whether name is one of the run's slaves: joined, or
// training (or about to) an RBM.
func (m *Master) current(name string) bool {
	if m.phase == gathering {
		for _, j := range m.joined {
			if j.name == name {
				return true
			}
		}
		return false
	}
	for _, s := range m.seats[1:] {
		if (s.lost == nil && s.slave == name) || s.replacement == name {
			return true
		}
	}
	return false
}

// vacancyFor returns the vacant RBM a replacement named name takes: the
// one it was lost from, if any, else the first; 0 if none is vacant.
func (m *Master) vacancyFor(name string) int {
	pick := 0
	for i := 1; i <= m.L; i++ {
		s := m.seats[i]
		if s.lost != nil && s.replacement == "" && (pick == 0 || s.lost.lost == name) {
			pick = i
		}
	}
	return pick
}
