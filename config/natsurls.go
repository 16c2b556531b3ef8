package config

import (
	"fmt"
	"net/url"
	"strings"
)

// NATSURLs splits a list of NATS server URLs separated by commas, as
// cluster.nats_url and `slave --nats` take it (nats.go connects to one of
// them and moves to another when its server goes away), and checks each: a
// scheme nats, tls, ws or wss and a host. Spaces around an item are
// dropped. The error names the first bad item and its place in the list.
func NATSURLs(list string) ([]string, error) {
	items := strings.Split(list, ",")
	urls := make([]string, 0, len(items))
	for i, item := range items {
		item = strings.TrimSpace(item)
		where := ""
		if len(items) > 1 {
			where = fmt.Sprintf("item %d of the list, ", i+1)
		}
		if item == "" {
			return nil, fmt.Errorf("%san empty URL: want URLs like nats://host:4222, separated by commas", where)
		}
		u, err := url.Parse(item)
		if err != nil || u.Host == "" || (u.Scheme != "nats" && u.Scheme != "tls" && u.Scheme != "ws" && u.Scheme != "wss") {
			return nil, fmt.Errorf("%s%q: must be a URL like nats://host:4222", where, item)
		}
		urls = append(urls, item)
	}
	return urls, nil
}
