// Package natsprobe is for tests of a NATS server's permissions: a client
// whose asynchronous errors (the server's refusals of its publishes and
// subscriptions) are collected, and checks on them.
package natsprobe

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// Client is a connection that keeps the server's asynchronous errors.
type Client struct {
	*nats.Conn
	errs chan error
}

// Dial connects to url with opts, never reconnecting.
func Dial(url string, opts ...nats.Option) (*Client, error) {
	errs := make(chan error, 16)
	opts = append(opts, nats.MaxReconnects(0), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		select {
		case errs <- err:
		default:
		}
	}))
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, err
	}
	return &Client{nc, errs}, nil
}

// Refused waits for the server to refuse what c did (what) on subject.
func (c *Client) Refused(t testing.TB, what, subject string) {
	t.Helper()
	select {
	case err := <-c.errs:
		if !errors.Is(err, nats.ErrPermissionViolation) || !strings.Contains(err.Error(), `"`+subject+`"`) {
			t.Errorf("%s on %s: async error %v; want a permissions violation for it", what, subject, err)
		}
	case <-time.After(5 * time.Second):
		t.Errorf("%s on %s: no permissions violation after 5s; want one", what, subject)
	}
}

// Quiet checks that the server refused nothing of c's so far.
func (c *Client) Quiet(t testing.TB) {
	t.Helper()
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-c.errs:
		t.Errorf("%s: unexpected async error %v", c.Opts.User, err)
	default:
	}
}
