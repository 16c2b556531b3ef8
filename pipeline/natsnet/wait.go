package natsnet

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats.go"
)

// ConnectWait is Connect, tried again every second for up to wait while no
// server of url can be reached (a name that does not resolve yet, a port
// that refuses connections): in a Swarm stack, which starts its services in
// no order, the master may start before any NATS node. A server that
// answers but refuses the credentials or the TLS handshake fails it at
// once. It logs the first failed attempt, and the connection once made.
func ConnectWait(ctx context.Context, url, name string, wait time.Duration, log hclog.Logger, opts ...nats.Option) (*nats.Conn, error) {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	deadline := time.Now().Add(wait)
	for attempt := 1; ; attempt++ {
		nc, err := Connect(url, name, opts...)
		if err == nil {
			if attempt > 1 {
				log.Info("NATS reached", "nats", url, "attempts", attempt)
			}
			return nc, nil
		}
		if !unreachable(err) || !time.Now().Before(deadline) {
			return nil, err
		}
		if attempt == 1 {
			log.Info("waiting for NATS", "nats", url, "up_to", wait, "error", err)
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(time.Second):
		}
	}
}

// unreachable reports whether err, of Connect, says that no server could be
// reached at all, as opposed to one that answered and refused.
func unreachable(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) || errors.Is(err, nats.ErrNoServers) || errors.Is(err, nats.ErrTimeout)
}
