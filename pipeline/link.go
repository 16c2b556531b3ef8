package pipeline

import (
	"context"
	"io"
)

// Sender is the producing end of a link: the master's data source, or stage
// i sending its middle results to stage i+1. A link delivers windows in
// order, loses none, and buffers a bounded number: Send blocks while the
// consumer holds no free credit.
type Sender interface {
	// Send queues a copy of w; the caller may reuse w when Send returns.
	Send(ctx context.Context, w *Window) error
	// Close tells the consumer that no window follows.
	Close(ctx context.Context) error
}

// Receiver is the consuming end of a link.
type Receiver interface {
	// Recv returns the next window, valid until the next call to Recv, or
	// io.EOF once the producer has closed the link and every window was
	// received.
	Recv(ctx context.Context) (*Window, error)
}

// MemLink is an in-process link: a bounded queue of window buffers that the
// consumer hands back as credit when it moves on to the next window.
type MemLink struct {
	full chan *Window
	free chan *Window
	held *Window
}

// NewMemLink returns a link holding at most credits windows in flight.
func NewMemLink(credits int) *MemLink {
	l := &MemLink{full: make(chan *Window, credits), free: make(chan *Window, credits)}
	for i := 0; i < credits; i++ {
		l.free <- &Window{}
	}
	return l
}

// Send implements Sender.
func (l *MemLink) Send(ctx context.Context, w *Window) error {
	var buf *Window
	select {
	case buf = <-l.free:
	case <-ctx.Done():
		return ctx.Err()
	}
	buf.Epoch, buf.Seq = w.Epoch, w.Seq
	buf.Rows = append(buf.Rows[:0], w.Rows...)
	buf.X = append(buf.X[:0], w.X...)
	if w.Bias == nil {
		buf.Bias = nil
	} else {
		buf.Bias = append(buf.Bias[:0], w.Bias...)
	}
	l.full <- buf // never blocks: at most cap(free) buffers exist
	return nil
}

// Close implements Sender.
func (l *MemLink) Close(ctx context.Context) error {
	close(l.full)
	return nil
}

// Recv implements Receiver.
func (l *MemLink) Recv(ctx context.Context) (*Window, error) {
	if l.held != nil {
		l.free <- l.held
		l.held = nil
	}
	select {
	case w, ok := <-l.full:
		if !ok {
			return nil, io.EOF
		}
		l.held = w
		return w, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
