// Command healthcheck probes the NATS server of its own container: it exits
// 0 when http://127.0.0.1:8222/healthz answers 200 (the server accepts
// clients and JetStream is ready), 1 otherwise. The nats image is FROM
// scratch, with no shell or curl for a compose healthcheck to run.
//
//	healthcheck [URL]
package main

import (
	"fmt"
	"net/http"
	"os"
	"time"
)

func main() {
	url := "http://127.0.0.1:8222/healthz"
	if len(os.Args) > 1 {
		url = os.Args[1]
	}
	c := http.Client{Timeout: 3 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		fmt.Fprintf(os.Stderr, "healthcheck: %v\n", err)
		os.Exit(1)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(os.Stderr, "healthcheck: %s: %s\n", url, resp.Status)
		os.Exit(1)
	}
}
