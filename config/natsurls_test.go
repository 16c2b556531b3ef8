package config

import (
	"strings"
	"testing"
)

func TestNATSURLs(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		list string
		want string // the URLs joined by spaces, or the error's text
		ok   bool
	}{
		{"nats://nats:4222", "nats://nats:4222", true},
		{"nats://a:4222,nats://b:4222, tls://c:4222", "nats://a:4222 nats://b:4222 tls://c:4222", true},
		{"localhost", `"localhost": must be a URL like nats://host:4222`, false},
		{"nats://a:4222,http://b:4222", `item 2 of the list, "http://b:4222": must be a URL`, false},
		{"nats://a:4222,,nats://c:4222", "item 2 of the list, an empty URL", false},
		{"nats://a:4222,", "item 2 of the list, an empty URL", false},
		{"nats://a:x", `"nats://a:x": must be a URL`, false},
	} {
		got, err := NATSURLs(c.list)
		if c.ok && (err != nil || strings.Join(got, " ") != c.want) {
			t.Errorf("NATSURLs(%q) = %q, %v; want %s", c.list, got, err, c.want)
		}
		if !c.ok && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("NATSURLs(%q) = %q, %v; want an error with %q", c.list, got, err, c.want)
		}
	}
}
