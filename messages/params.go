package messages

import "fmt"

// Params carries the parameters of one replica of RBM_i for the replicas'
// average (stage replicas train a group data-parallel and average their
// parameters every Assign.SyncEvery windows). A replica
// sends its parameters after its windows of round Round to the master;
// once every replica's are in, the master sends each replica their mean,
// as a Params of the same Round. A replica's last round is Final: after
// its last window it sends its parameters once more, and the RBM's
// weights are the mean of the last round.
type Params struct {
	// RunID names the run.
	RunID string
	// Incarnation is the run's incarnation, as in Assign.
	Incarnation uint32
	// RBM is i and Replica the sender's place among its replicas (from a
	// master: the addressee's).
	RBM, Replica int
	// Round counts the averages, from 1.
	Round int
	// Final says the replica has trained its last window.
	Final bool
	// Windows is how many windows the replica trained since the last
	// average: the weight of its parameters in the mean (all alike when
	// every replica trained none).
	Windows int
	// Visible and Hidden are the sizes of L_(i-1) and L_i.
	Visible, Hidden int
	// W holds the Visible x Hidden weights, row-major; A the visible and
	// B the hidden biases. Hidden 0: W holds the flat parameter vector of
	// Visible values of the network of data-parallel fine-tuning, and A
	// and B are empty.
	W, A, B []float32
}

// Kind returns KindParams.
func (*Params) Kind() Kind { return KindParams }

func (m *Params) validate() error {
	if m.RBM < 1 || m.Round < 1 {
		return invalid("rbm %d, round %d: want both >= 1", m.RBM, m.Round)
	}
	if err := paramsShape(len(m.W), len(m.A), len(m.B), m.Visible, m.Hidden); err != nil {
		return err
	}
	return nonNegative("replica", m.Replica, "windows", m.Windows)
}

// Check reports whether p is a consistent set of parameters of RBM_rbm of
// run runID with the given shape; errors wrap ErrMismatch or ErrShape.
func (m *Params) Check(runID string, rbm, visible, hidden int) error {
	if m.RunID != runID || m.RBM != rbm {
		return fmt.Errorf("params of run %q rbm %d, want %q rbm %d: %w", m.RunID, m.RBM, runID, rbm, ErrMismatch)
	}
	if m.Visible != visible || m.Hidden != hidden {
		return fmt.Errorf("params of rbm %d: %d x %d, want %d x %d: %w", m.RBM, m.Visible, m.Hidden, visible, hidden, ErrShape)
	}
	return m.validate()
}

func (m *Params) fields(c *coder) {
	c.run(&m.RunID, &m.Incarnation)
	c.int(&m.RBM, "rbm")
	c.int(&m.Replica, "replica")
	c.int(&m.Round, "round")
	c.bool(&m.Final, "final")
	c.int(&m.Windows, "windows")
	c.int(&m.Visible, "visible")
	c.int(&m.Hidden, "hidden")
	c.f32s(&m.W, "w")
	c.f32s(&m.A, "a")
	c.f32s(&m.B, "b")
}
